import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { NatsConnection, Subscription } from 'nats';
import {
  Buckets,
  Events,
  InstanceTypeChanged,
  Node,
  NodeLedger,
  Pool,
  PoolIdentity,
  WatchEventType,
  NodeInventory,
  NodePhase,
  NodeStatus,
  NodeRuntimeReport,
  WatchInstanceTypesResponse,
} from '@gpufleet/contracts';
import { CapacityModel, InstanceTypeEvent, NO_ALLOCATIONS } from '@gpufleet/capacity-core';
import { ledgerAllocations, NodeLiveness, type NodeTenancy, PhaseTransition } from '@gpufleet/scheduling-core';
import { validateInventory } from '@gpufleet/device-inventory';
import { EventBus, KvChange, KvMirror, KvStore, NATS_CONNECTION } from '@gpufleet/messaging';
import { LOGGER, type Logger } from '@gpufleet/observability';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { Leadership } from '../leadership/leadership';

export type InstanceTypeListener = (event: WatchInstanceTypesResponse) => void;

const NOTHING_WITHHELD: ReadonlySet<string> = new Set();

/**
 * The scheduler's live view of capacity: node records come from the nodes bucket by watch,
 * liveness from heartbeat events, and every change is folded into the CapacityModel,
 * published as an event and pushed to gRPC watchers.
 */
@Injectable()
export class CapacityStateService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger: Logger;
  private modelValue?: CapacityModel;
  private readonly liveness: NodeLiveness;
  private readonly listeners = new Set<InstanceTypeListener>();
  private readonly nodeListeners = new Set<(node: Node) => void>();
  private readonly removalListeners = new Set<(node: string, pool: string) => void>();
  private nodes?: KvMirror<NodeInventory>;
  private placementGate?: (node: string) => string | undefined;
  private deviceGate?: (node: string) => ReadonlySet<string>;
  /** Each node's ledger as last applied, to fold withheld devices in again when the gate changes. */
  private readonly ledgers = new Map<string, NodeLedger>();
  /** What each node's runtime reported of itself (sandboxed, sharing allowed). */
  private runtimes?: KvMirror<NodeRuntimeReport>;
  private heartbeats?: Subscription;
  private sweeper?: NodeJS.Timeout;
  private statusStore?: KvStore<NodeStatus>;
  private poolStore?: KvStore<Pool>;
  private readonly pinnedPools = new Set<string>();
  private synced = false;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    private readonly bus: EventBus,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
    /** Only the leader publishes capacity events and writes node status. */
    private readonly leadership: Leadership,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.logger = logger.child({ context: 'capacity' });
    this.liveness = new NodeLiveness(config.NOT_READY_TIMEOUT_S * 1000);
  }

  get model(): CapacityModel {
    if (!this.modelValue) throw new Error('capacity model used before the scheduler loaded the store');
    return this.modelValue;
  }

  get ready(): boolean {
    return this.synced;
  }

  async onModuleInit(): Promise<void> {
    const js = this.nc.jetstream();
    const cluster = this.config.GPUFLEET_CLUSTER;
    const nodes = new KvMirror(await KvStore.open(js, Buckets.nodes(cluster), NodeInventory), { logger: this.logger });
    this.nodes = nodes;
    // Read before the nodes, so placement never sees a node without what its runtime said.
    const runtimes = new KvMirror(await KvStore.open(js, Buckets.runtimes(cluster), NodeRuntimeReport), { logger: this.logger });
    this.runtimes = runtimes;
    await runtimes.start();
    runtimes.listen((node, change) => {
      if (change.kind === 'put' && change.value.node !== node) {
        this.logger.warn({ node, revision: change.revision }, `INVALID_RUNTIME_REPORT: ${node} revision ${change.revision} names node "${change.value.node}": ignored`);
      }
      this.nodeChanged(node);
    });
    this.statusStore = await KvStore.open(js, Buckets.nodeStatus(cluster), NodeStatus);
    this.poolStore = await KvStore.open(js, Buckets.pools(cluster), Pool);
    // Pool names are part of the API (InstanceType names derive from them): keep them stable
    // across restarts by handing the model the names it gave out before.
    const pinned = (await this.poolStore.list((e) => this.logger.error(e.message))).map((v) => {
      this.pinnedPools.add(v.key);
      return { name: v.key, identity: v.value.identity ?? PoolIdentity.fromPartial({}) };
    });
    this.modelValue = new CapacityModel({ pinnedPoolNames: pinned });
    // Phases persisted by the previous scheduler: Ready nodes get a fresh grace period,
    // NotReady ones wait for a heartbeat, so a scheduler restart does not flap capacity.
    const previous = new Map((await this.statusStore.list()).map((v) => [v.key, v.value.phase]));

    this.heartbeats = this.bus.subscribe(
      Events.heartbeat,
      (ev) => {
        const t = this.liveness.beat(ev.payload.nodeName, Date.now());
        if (t) this.applyTransition(t);
      },
      { onInvalid: (e) => this.logger.warn(e.message), onError: (e) => this.logger.error({ err: e }, `heartbeat handling failed: ${(e as Error).message}`) },
    );
    void this.graceAfterReconnect();
    // The initial snapshot is applied as one batch: one event per InstanceType, and pool
    // names that do not depend on the order node records arrive in. Reading the entries and
    // registering the listener in one synchronous step misses no change and sees none twice.
    const apply = (change: KvChange<NodeInventory>): void => {
      if (change.kind === 'delete') {
        const pool = this.model.getNode(change.key)?.pool;
        this.liveness.forget(change.key);
        this.emit(this.model.removeNode(change.key));
        if (pool !== undefined) for (const l of this.removalListeners) l(change.key, pool);
        return;
      }
      const inv = change.value;
      const problems = validateInventory(inv, this.config.GPUFLEET_CLUSTER);
      if (inv.nodeName !== change.key) problems.unshift(`nodeName: expected "${change.key}" (the record's key), got "${inv.nodeName}"`);
      if (problems.length > 0) {
        // Keep whatever was accepted before; a bad record never reaches the views.
        this.logger.warn({ node: change.key, revision: change.revision }, `INVALID_NODE_RECORD: ${change.key} revision ${change.revision} ignored: ${problems.join('; ')}`);
        return;
      }
      const known = this.liveness.phaseOf(inv.nodeName) !== undefined;
      const status = this.liveness.track(inv.nodeName, Date.now(), previous.get(inv.nodeName) !== NodePhase.NODE_PHASE_NOT_READY);
      this.emit(this.model.upsertNode(inv));
      if (!known) this.emit(this.model.setPhase(inv.nodeName, status.phase, status));
      this.nodeChanged(inv.nodeName);
    };
    await nodes.start();
    const snapshot = [...nodes.entries].map(([key, e]): KvChange<NodeInventory> => ({ kind: 'put', key, value: e.value, revision: e.revision }));
    this.emit(this.model.batch(() => snapshot.forEach(apply)));
    nodes.listen((_key, change) => apply(change));
    this.synced = true;
    const every = Math.max(100, Math.min(1000, this.liveness.timeoutMs / 5));
    this.sweeper = setInterval(() => this.liveness.sweep(Date.now()).forEach((t) => this.applyTransition(t)), every);
    this.logger.info(`capacity synced: ${this.model.listNodes().length} nodes, ${this.model.listInstanceTypes().length} InstanceTypes`);
  }

  onApplicationShutdown(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.nodes?.stop();
    this.runtimes?.stop();
    this.heartbeats?.unsubscribe();
    for (const l of this.listeners) this.listeners.delete(l);
  }

  /**
   * A node as the API shows it: the model keeps the status of the last transition, the
   * liveness tracker the latest heartbeat, the runtimes bucket what its runtime reported.
   */
  shownNode(node: Node): Node {
    const lastHeartbeat = this.liveness.lastHeartbeat(node.name);
    const withBeat = lastHeartbeat && node.status ? { ...node, status: { ...node.status, lastHeartbeat } } : node;
    const runtime = this.runtimeOf(node.name);
    const held = this.heldBack(node.name);
    const gated = held && withBeat.status ? { ...withBeat, status: { ...withBeat.status, message: [withBeat.status.message, `not placed on: ${held}`].filter(Boolean).join('; ') } } : withBeat;
    return runtime ? { ...gated, runtime } : gated;
  }

  /**
   * Whether placement may use the node: Ready, and not held back by the placement gate (the
   * kubernetes runtime's: a cordoned, NotReady or tainted Kubernetes Node). Without a gate, Ready.
   */
  placeable(node: Node): boolean {
    return node.status?.phase === NodePhase.NODE_PHASE_READY && this.heldBack(node.name) === undefined;
  }

  /** Why the gate keeps placement off the node; undefined when it does not. */
  heldBack(node: string): string | undefined {
    return this.placementGate?.(node);
  }

  /** Sets the one placement gate (the kubernetes runtime); undefined removes it. */
  setPlacementGate(gate: ((node: string) => string | undefined) | undefined): void {
    this.placementGate = gate;
  }

  /**
   * Sets the one device gate (the kubernetes runtime's: accelerators the node's kubelet cannot
   * allocate); undefined removes it. Withheld accelerators count as taken in the capacity views
   * and are offered for nothing by placement.
   */
  setDeviceGate(gate: ((node: string) => ReadonlySet<string>) | undefined): void {
    this.deviceGate = gate;
  }

  /** Accelerator ids of the node the device gate withholds; empty without a gate. */
  withheldOf(node: string): ReadonlySet<string> {
    return this.deviceGate?.(node) ?? NOTHING_WITHHELD;
  }

  /** The device gate's answer for the node changed: the views and placement follow. */
  refreshDevices(node: string): void {
    if (this.modelValue?.getNode(node)) this.applyLedger(node, this.ledgers.get(node));
    this.nodeChanged(node);
  }

  /** Tells the node listeners (admission) that the node changed, e.g. when the gate's answer did. */
  refreshNode(name: string): void {
    this.nodeChanged(name);
  }

  /** The node's record in the nodes bucket (its inventory); undefined when unknown. */
  inventoryOf(node: string): NodeInventory | undefined {
    return this.nodes?.get(node)?.value;
  }

  /** The node runtime's report of itself; undefined when none (or a malformed one) was written. */
  runtimeOf(node: string): NodeRuntimeReport | undefined {
    const report = this.runtimes?.get(node)?.value;
    return report?.node === node ? report : undefined;
  }

  /**
   * Whether pods of several namespaces may share the node: not when its runtime said its pods
   * run unconfined and the admin did not allow sharing. A node without a report is shared, as
   * before runtimes reported (its runtime has started nothing yet; Kubernetes isolates itself).
   */
  tenancyOf(node: string): NodeTenancy {
    const report = this.runtimeOf(node);
    return report && !report.sandboxed && !report.sharingAllowed ? 'exclusive' : 'shared';
  }

  /** Called with the node after every change of its inventory or phase. */
  onNodeChanged(listener: (node: Node) => void): () => void {
    this.nodeListeners.add(listener);
    return () => this.nodeListeners.delete(listener);
  }

  /** Called after a node record was deleted, with the pool it was in. */
  onNodeRemoved(listener: (node: string, pool: string) => void): () => void {
    this.removalListeners.add(listener);
    return () => this.removalListeners.delete(listener);
  }

  /**
   * On becoming leader: publish every InstanceType as ADDED (standbys publish nothing, so
   * consumers resynchronise from the new leader) and pin the pool names.
   */
  resyncAsLeader(): void {
    this.pinNewPools();
    for (const instanceType of this.model.listInstanceTypes()) {
      this.bus.publish(Events.instanceTypeChanged, { type: WatchEventType.WATCH_EVENT_TYPE_ADDED, cluster: this.config.GPUFLEET_CLUSTER, instanceType });
    }
  }

  private nodeChanged(name: string): void {
    const node = this.modelValue?.getNode(name);
    if (node) for (const l of this.nodeListeners) l(node);
  }

  /** Folds a node's devices ledger, and the devices the gate withholds, into the capacity views (every replica does this). */
  applyLedger(node: string, ledger: NodeLedger | undefined): void {
    if (ledger) this.ledgers.set(node, ledger);
    else this.ledgers.delete(node);
    const allocations = ledger ? ledgerAllocations(ledger) : NO_ALLOCATIONS;
    const withheld = [...this.withheldOf(node)].filter((id) => !allocations.accelerators?.[id]);
    const held = withheld.length === 0 ? allocations : { ...allocations, accelerators: { ...allocations.accelerators, ...Object.fromEntries(withheld.map((id) => [id, { mode: 'whole' as const }])) } };
    this.emit(this.model.setAllocations(node, held));
  }

  /** Registers a watcher; returns the function that removes it. */
  listen(listener: InstanceTypeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private pinNewPools(): void {
    for (const pool of this.model.listPools()) {
      if (this.pinnedPools.has(pool.name)) continue;
      this.pinnedPools.add(pool.name);
      const record = Pool.fromPartial({ name: pool.name, identity: pool.identity });
      this.poolStore?.create(pool.name, record).catch((e: Error) => this.logger.warn(`could not pin pool name ${pool.name}: ${e.message}`));
    }
  }

  /**
   * While the scheduler itself could not reach NATS it heard no heartbeats; that says nothing
   * about the nodes. After a reconnect every node gets a fresh grace period instead of being
   * declared NotReady for the scheduler's own outage.
   */
  private async graceAfterReconnect(): Promise<void> {
    for await (const s of this.nc.status()) {
      if (s.type === 'reconnect') this.liveness.graceAll(Date.now());
    }
  }

  private applyTransition(t: PhaseTransition): void {
    const node = this.model.getNode(t.node);
    this.emit(this.model.setPhase(t.node, t.status.phase, t.status));
    this.nodeChanged(t.node);
    if (!this.leadership.isLeader) return;
    const ready = t.status.phase === NodePhase.NODE_PHASE_READY;
    this.logger.info({ node: t.node }, `node ${t.node} is ${ready ? 'Ready' : 'NotReady'}: ${t.status.message}`);
    this.bus.publish(Events.nodeStatusChanged, {
      nodeName: t.node,
      cluster: this.config.GPUFLEET_CLUSTER,
      status: t.status,
      pool: node?.pool ?? '',
    });
    this.statusStore?.put(t.node, t.status).catch((e: Error) => this.logger.warn(`could not persist status of ${t.node}: ${e.message}`));
  }

  private emit(events: InstanceTypeEvent[]): void {
    if (events.length > 0 && this.leadership.isLeader) this.pinNewPools();
    for (const ev of events) {
      const change: InstanceTypeChanged = { type: ev.type, cluster: this.config.GPUFLEET_CLUSTER, instanceType: ev.instanceType };
      if (this.leadership.isLeader) this.bus.publish(Events.instanceTypeChanged, change);
      const msg: WatchInstanceTypesResponse = { type: ev.type, instanceType: ev.instanceType };
      for (const l of this.listeners) l(msg);
    }
  }
}
