import { Inject, Injectable } from '@nestjs/common';
import { ArtifactNodeStatus, Events, EventDefinition, parseWorkloadKey, PodPlacement, Workload, WorkloadEvent, WorkloadPhase } from '@gpufleet/contracts';
import { nodesHoldingWeights } from '@gpufleet/deployments-core';
import { EventBus, ReconcileLoop, RevisionConflictError, type ReconcilePass } from '@gpufleet/messaging';
import { LOGGER, METRICS_REGISTRY, type Logger, type Registry } from '@gpufleet/observability';
import {
  AdmissionController,
  AdmitDecision,
  LedgerRelease,
  PlacementEngine,
  type PlacementOutcome,
  type PlacementRequest,
  PreemptDecision,
  QueueManager,
  WorkloadLifecycleEvent,
  planTakeover,
  poolShapeFromCapacity,
} from '@gpufleet/scheduling-core';
import { CapacityStateService } from '../capacity/capacity-state.service';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { Leadership } from '../leadership/leadership';
import { LedgerConflictError, LedgerWriter } from './ledger-writer';
import { SchedulingStore } from './scheduling-store.service';
import { keyOfSpec, storeKey } from './workload-keys';

const EVENT_OF: Record<WorkloadLifecycleEvent['kind'], EventDefinition<WorkloadEvent>> = {
  submitted: Events.workloadSubmitted,
  quota_reserved: Events.workloadQuotaReserved,
  admitted: Events.workloadAdmitted,
  preempted: Events.workloadPreempted,
  finished: Events.workloadFinished,
};

/** Admissions per cycle before yielding to I/O and new submissions. */
const MAX_ADMISSIONS_PER_CYCLE = 256;

/**
 * The leader's admission loop. On taking the lease it rebuilds the placement engine from the
 * node records and the devices ledger, reconciles the ledger with the workload records (an
 * admission interrupted between ledger commit and status write is completed, half-written
 * ones are undone) and restores the queues; then it admits in cycles, committing each
 * placement to the ledger with compare-and-set before recording the workload as Admitted.
 */
@Injectable()
export class AdmissionService {
  private readonly logger: Logger;
  private readonly loop: ReconcileLoop;
  private controller?: AdmissionController;
  private engine?: PlacementEngine;
  private ledger?: LedgerWriter;
  private readonly unsubscribe: Array<() => void> = [];
  private readonly written = new Map<string, number>(); // workload key → revision we last wrote
  private readonly refused = new Set<string>(); // pending records the controller did not accept yet
  private readonly writes = new Map<string, Promise<void>>(); // per workload, the last queued status write
  private queues?: QueueManager;

  constructor(
    private readonly store: SchedulingStore,
    private readonly capacity: CapacityStateService,
    private readonly bus: EventBus,
    private readonly leadership: Leadership,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
    @Inject(LOGGER) logger: Logger,
    @Inject(METRICS_REGISTRY) registry: Registry,
  ) {
    this.logger = logger.child({ context: 'admission' });
    // A cycle whose decision failed (a store write) is run again after 1 s; the others in it go on.
    this.loop = new ReconcileLoop({ name: 'admission', logger: this.logger, registry, retryMs: 1_000, pass: (run) => this.cycle(run) });
  }

  /** True from the end of lead() until stepDown(): the queues and placements are restored and live. */
  private get isLive(): boolean {
    return this.leadership.isLeader && this.loop.isActive;
  }

  /** The live queue state (usage, borrowing), on the leader only. */
  get liveQueues(): QueueManager | undefined {
    return this.isLive ? this.queues : undefined;
  }

  /** The live controller, on the leader only. */
  get live(): AdmissionController | undefined {
    return this.isLive ? this.controller : undefined;
  }

  /**
   * Whether the live placement engine could place `request` now, over the devices the ledger
   * leaves free (quota is not counted); changes nothing. Undefined unless live on the leader.
   */
  tryPlace(request: PlacementRequest): PlacementOutcome | undefined {
    return this.isLive ? this.engine?.tryPlace(request) : undefined;
  }

  async lead(term: number): Promise<void> {
    const model = this.capacity.model;
    const engine = new PlacementEngine();
    for (const node of model.listNodes()) {
      if (node.inventory) engine.upsertNode(node.inventory, this.capacity.placeable(node), node.pool, this.capacity.tenancyOf(node.name), this.capacity.withheldOf(node.name));
    }
    const ledgers = [...this.store.ledger.entries.values()].map((e) => e.value);
    for (const problem of engine.loadLedger(ledgers)) this.logger.error(`ledger: ${problem}`);
    const queues = new QueueManager();
    for (const { value } of this.store.clusterQueues.entries.values()) this.tryQueue(() => queues.putClusterQueue(value, {}), `ClusterQueue ${value.name}`);
    for (const { value } of this.store.localQueues.entries.values()) this.tryQueue(() => queues.putLocalQueue(value), `LocalQueue ${value.namespace}/${value.name}`);
    const pools = model.listPools().map((p) => poolShapeFromCapacity(model, p.name)).filter((s) => s !== undefined);
    // Weight locality: a replica tries first the nodes whose cache holds its artifact, Ready.
    const copies = () => [...this.store.copies.entries].map(([key, e]): [string, ArtifactNodeStatus] => [key, e.value]);
    const controller = new AdmissionController({ placer: engine, queues, pools, preferredNodes: (spec) => nodesHoldingWeights(spec, spec.template?.engine?.artifact ? copies() : []) });
    this.engine = engine;
    this.controller = controller;
    this.queues = queues;
    const stillLeading = this.leadership.stillLeadingThisTerm();
    this.ledger = new LedgerWriter(this.store.ledger.store, (n) => model.getNode(n)?.inventory, () => stillLeading() && this.controller === controller);

    const workloads = await this.reconcile(engine);
    const restored = controller.restore(workloads, { commitPlacements: false });
    for (const w of restored.warnings) this.logger.warn(`restore: ${w}`);
    this.logger.info({ term }, `leading (term ${term}): ${restored.admitted} admitted, ${restored.pending} pending, ${restored.finished} finished workloads restored`);

    this.unsubscribe.push(
      this.store.workloads.listen((key, change) => {
        if (change.kind === 'delete') void this.onDeleted(key);
        else if (change.value.status?.phase === WorkloadPhase.WORKLOAD_PHASE_PENDING && !controller.getWorkload(key)) this.onSubmitted(change.value);
      }),
      this.store.clusterQueues.listen((_k, change) => {
        if (change.kind === 'put') this.tryQueue(() => queues.putClusterQueue(change.value, {}), `ClusterQueue ${change.value.name}`);
        else this.tryQueue(() => queues.deleteClusterQueue(change.key), `ClusterQueue ${change.key}`);
        this.retryRefused();
        this.kick();
      }),
      this.store.localQueues.listen((key, change) => {
        if (change.kind === 'put') this.tryQueue(() => queues.putLocalQueue(change.value), `LocalQueue ${key}`);
        else this.tryQueue(() => { const q = parseWorkloadKey(key); if (q) queues.deleteLocalQueue(q.namespace, q.name); }, `LocalQueue ${key}`);
        this.retryRefused();
        this.kick();
      }),
      this.capacity.onNodeRemoved((name, pool) => {
        engine.removeNode(name);
        const shape = poolShapeFromCapacity(model, pool);
        if (shape) controller.setPoolShape(shape);
        else controller.removePoolShape(pool);
        this.kick();
      }),
      this.capacity.onNodeChanged((node) => {
        if (!node.inventory) return;
        engine.upsertNode(node.inventory, this.capacity.placeable(node), node.pool, this.capacity.tenancyOf(node.name), this.capacity.withheldOf(node.name));
        const shape = poolShapeFromCapacity(model, node.pool);
        if (shape) controller.setPoolShape(shape);
        controller.capacityChanged(node.pool);
        this.kick();
      }),
    );
    // Records that arrived while we were restoring.
    for (const { value } of this.store.workloads.entries.values()) {
      if (value.spec && !controller.getWorkload(keyOfSpec(value.spec)) && value.status?.phase === WorkloadPhase.WORKLOAD_PHASE_PENDING) this.onSubmitted(value);
    }
    this.loop.start();
  }

  stepDown(): void {
    void this.loop.stop();
    this.refused.clear();
    this.unsubscribe.splice(0).forEach((u) => u());
    this.controller = undefined;
    this.engine = undefined;
  }

  private tryQueue(apply: () => unknown, what: string): void {
    try {
      apply();
    } catch (err) {
      this.logger.warn(`${what} not applied: ${(err as Error).message}`);
    }
  }

  /**
   * Makes the workload records agree with the ledger, which is written first: a workload the
   * ledger holds is admitted (its status write was interrupted); ledger entries of workloads
   * that are gone or not admitted-and-complete are removed. The rules: `planTakeover`.
   */
  private async reconcile(engine: PlacementEngine): Promise<Workload[]> {
    const plan = planTakeover({
      workloads: [...this.store.workloads.entries.values()].map((e) => e.value),
      ledgers: [...this.store.ledger.entries.values()].map((e) => e.value),
      placementsOf: (key) => engine.placementsOf(key),
      now: new Date(),
    });
    for (const d of plan.decisions) {
      if (d.kind === 'requeue' || d.kind === 'complete') {
        this.logger.warn(d.kind === 'requeue' ? `re-queueing ${d.key}: ${d.reason}` : `completing the admission of ${d.key}: ${d.reason}`);
        d.workload.status = d.status; // the mirrored record takes the new status at once
        await this.writeWorkload(d.key, d.workload);
      } else if (d.kind === 'release') {
        await this.releaseFromLedger(engine, d);
      }
    }
    for (const orphan of plan.orphans) await this.releaseFromLedger(engine, orphan);
    return plan.restore;
  }

  private async releaseFromLedger(engine: PlacementEngine, r: LedgerRelease): Promise<void> {
    this.logger.warn(`releasing ${r.key} from the ledger: ${r.reason}`);
    engine.release(r.key);
    await this.ledger!.remove(r.key, r.placements);
  }

  private onSubmitted(record: Workload): void {
    const controller = this.controller!;
    const result = controller.submit(record.spec!, record.status?.submittedAt ?? new Date());
    if (!result.accepted) {
      // Validated at the API; it can still fail here when a queue changed in between, or when
      // this leader has not yet seen the queue the API saw. Kept and tried again whenever
      // queues change.
      this.refused.add(keyOfSpec(record.spec!));
      this.logger.warn(`workload ${keyOfSpec(record.spec!)} not accepted yet: ${result.message}`);
      const status = { ...record.status!, pending: { gates: [{ gate: 'Validation', passed: false, reason: result.code, message: result.message }], queuePosition: 0, largestFreeBlock: '' } };
      void this.writeWorkload(keyOfSpec(record.spec!), { ...record, status });
      return;
    }
    // Record where it queues and what it costs, so every replica (not only the leader) can
    // answer for it while it waits.
    void this.writeWorkload(keyOfSpec(record.spec!), { ...record, status: result.workload.status });
    this.publish(result.events);
    this.kick();
  }

  private retryRefused(): void {
    for (const key of [...this.refused]) {
      this.refused.delete(key);
      const record = this.store.workloads.entries.get(key)?.value;
      if (record && !this.controller?.getWorkload(key)) this.onSubmitted(record);
    }
  }

  private async onDeleted(key: string): Promise<void> {
    this.refused.delete(key);
    const controller = this.controller;
    if (!controller?.getWorkload(key)) return;
    const released = controller.delete(key);
    this.written.delete(key);
    try {
      await this.ledger!.remove(key, released.releasedPlacements);
    } catch (err) {
      this.logger.error(`could not release ${key} from the ledger: ${(err as Error).message}`);
    }
    this.publish(released.events);
    this.kick();
  }

  /**
   * Asks for a cycle. Several changes in a row coalesce into one; a change that arrives while a
   * cycle is applying its decisions (awaiting the store) makes the loop run once more after it.
   */
  kick(): void {
    this.loop.kick();
  }

  private async cycle(run: ReconcilePass): Promise<void> {
    const controller = this.controller;
    if (!controller) return;
    const { decisions } = controller.cycle(new Date(), { maxAdmissions: MAX_ADMISSIONS_PER_CYCLE });
    await run.each(
      decisions,
      (d) => `${d.kind} of ${d.key}`,
      (d) => (d.kind === 'preempt' ? this.applyPreemption(d) : this.applyAdmission(controller, d)),
    );
    // A full cycle may have left admissible workloads behind.
    if (decisions.filter((d) => d.kind === 'admit').length >= MAX_ADMISSIONS_PER_CYCLE) this.loop.kick();
  }

  private async applyAdmission(controller: AdmissionController, d: AdmitDecision): Promise<void> {
    try {
      await this.ledger!.add(d.key, d.placements);
    } catch (err) {
      const why = err instanceof RevisionConflictError || err instanceof LedgerConflictError ? err.message : `ledger write failed: ${(err as Error).message}`;
      controller.abortAdmission(d.key, why);
      this.logger.warn({ workload: d.key }, `admission of ${d.key} aborted, will retry: ${why}`);
      this.engine!.loadLedger([...this.store.ledger.entries.values()].map((e) => e.value));
      controller.capacityChanged(d.pool);
      this.loop.kickAfter(200); // the mirror catches up with the store meanwhile
      return;
    }
    const confirmed = controller.confirmAdmission(d.key, d.placements);
    if (!confirmed.ok) {
      await this.ledger!.remove(d.key, d.placements); // deleted while we wrote
      return;
    }
    await this.writeWorkload(d.key, confirmed.workload);
    this.publish([...d.events, ...confirmed.events]);
  }

  /**
   * The kubelet gave these pods other devices than the ledger says (kubernetes runtime): the
   * placement engine, the ledger and the workload records take the kubelet's, all corrections of
   * one call together (two pods whose devices were swapped). Returns why nothing changed, or
   * undefined when it did. Only the live leader corrects.
   */
  async correctDevices(pods: readonly { workload: string; after: PodPlacement }[]): Promise<string | undefined> {
    const controller = this.controller;
    const engine = this.engine;
    const ledger = this.ledger;
    if (!this.isLive || !controller || !engine || !ledger) return 'this scheduler is not the live leader';
    const samePod = (a: PodPlacement, b: PodPlacement): boolean => a.node === b.node && a.podSet === b.podSet && a.replica === b.replica && a.pod === b.pod;
    const before = new Map<string, PodPlacement[]>();
    const corrected = new Map<string, PodPlacement[]>();
    for (const { workload } of pods) {
      if (before.has(workload)) continue;
      const held = engine.placementsOf(workload);
      before.set(workload, held);
      corrected.set(workload, held.map((p) => pods.find((c) => c.workload === workload && samePod(c.after, p))?.after ?? p));
    }
    const result = controller.correctPlacements(corrected);
    if (!result.ok) return result.message;
    const nodes = new Map<string, Array<{ workload: string; after: PodPlacement }>>();
    for (const pod of pods) nodes.set(pod.after.node, [...(nodes.get(pod.after.node) ?? []), pod]);
    try {
      for (const [node, fixes] of nodes) await ledger.correct(node, fixes);
    } catch (err) {
      // The engine and the records follow the ledger again; nothing is half corrected in memory.
      controller.correctPlacements(before);
      engine.loadLedger([...this.store.ledger.entries.values()].map((e) => e.value));
      return (err as Error).message;
    }
    for (const workload of result.workloads) await this.writeWorkload(keyOfSpec(workload.spec!), workload);
    return undefined;
  }

  private async applyPreemption(d: PreemptDecision): Promise<void> {
    await this.ledger!.remove(d.key, d.releasedPlacements);
    await this.writeWorkload(d.key, d.workload);
    this.publish(d.events);
  }

  /**
   * Writes a workload's record (the leader owns status; the spec never changes after submit).
   * Writes of one workload are serialised in call order, so a slow earlier write (pending)
   * can never land after a later one (admitted).
   */
  private writeWorkload(key: string, workload: Workload): Promise<void> {
    const previous = this.writes.get(key) ?? Promise.resolve();
    const next = previous.then(() => this.writeWorkloadNow(key, workload)).catch((err: Error) => {
      this.logger.error(`could not record the status of ${key}: ${err.message}`);
    });
    this.writes.set(key, next);
    void next.then(() => {
      if (this.writes.get(key) === next) this.writes.delete(key);
    });
    return next;
  }

  private async writeWorkloadNow(key: string, workload: Workload): Promise<void> {
    const skey = storeKey(key);
    const mirrored = this.store.workloads.get(key);
    // This leader's own last write may not have come back through the mirror yet.
    const revision = Math.max(mirrored?.revision ?? 0, this.written.get(key) ?? 0);
    const written = await this.store.workloads.store.modify(
      skey,
      // A replaced leader must not overwrite what the new one records; a record deleted
      // meanwhile stays deleted (the delete handler releases it).
      (current) => (this.controller && current ? workload : undefined),
      revision > 0 ? { known: { key: skey, value: mirrored?.value ?? workload, revision } } : {},
    );
    if (written) this.written.set(key, written.revision);
  }

  private publish(events: readonly WorkloadLifecycleEvent[]): void {
    for (const e of events) {
      this.bus.publish(EVENT_OF[e.kind], { cluster: this.config.GPUFLEET_CLUSTER, workload: e.workload, reason: e.reason ?? '' });
    }
  }
}
