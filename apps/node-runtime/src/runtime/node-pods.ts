import { chownSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'fs';
import { userInfo } from 'os';
import { dirname, join } from 'path';
import { parsePodStoreKey, podStoreKey, storeKey, workloadKey, type PodRef, type PodRuntimeStatus } from '@gpufleet/contracts';
import {
  desiredPods,
  diffPods,
  instanceName,
  instancesDir,
  inventoryDeviceNodes,
  planPod,
  podDir,
  podLogFile,
  podRuntimeStatus,
  podWorkDir,
  groupRestartReason,
  leaderNodeOf,
  resolveEngineMode,
  resolveGroup,
  sshdLogFile,
  type DesiredPod,
  type GroupResolution,
  stateFilePath,
  type FailedPodPlan,
  type KnownPod,
  type PlanContext,
  type PodSandboxContext,
  type PodPlan,
  type PodProcess,
  type RunnablePodPlan,
} from '@gpufleet/node-runtime-core';
import { ReconcileLoop, type KvStore } from '@gpufleet/messaging';
import type { Logger, Registry } from '@gpufleet/observability';
import { freePort } from '@gpufleet/process-kit';
import { DEVICE_VISIBILITY_VARS, ProcessTable, SshdInstance, StateFile, writeSandboxIdentity, type ProcessEvent, type ProcessSpec } from '@gpufleet/process-runtime';
import { engineSimEntry, instanceListenAddress, isMultiNode, nodeRuntimeConfigSchema, NodeRuntimeConfig, REPO_ROOT, runtimeUrlOf, stateDirOf } from '../config';
import type { NodeView } from './node-state.service';
import { PodStatusWriter } from './pod-status-writer';
import type { NodeRuntimeMetrics } from './runtime-metrics';

/** A pod whose processes this runtime supervises. */
interface ManagedPod {
  plan: RunnablePodPlan;
  /** ProcessTable ids, the one reported first (engine, sshd) first. */
  processIds: string[];
  roles: string[];
  sshd: SshdInstance | undefined;
  /** Carried over from the record of an earlier runtime, for processes this one adopted. */
  restartsBefore: number;
  startedAt: Date | undefined;
}

/** Who instance sessions log in as: this process's user, the same for every node it runs. */
const SSH_USER = userInfo().username;

/** Safety net: reconcile this often even without a change (a failed start, a missed event). */
const RESYNC_MS = 30_000;

export interface NodePodsOptions {
  config: NodeRuntimeConfig;
  /** The node's inventory, ledger and the workloads, live. */
  view: NodeView;
  /** The pods bucket, shared by every node of the process. */
  pods: KvStore<PodRuntimeStatus>;
  /** This node's records in the pods bucket when the runtime started, by key. */
  previous: ReadonlyMap<string, PodRuntimeStatus>;
  metrics: NodeRuntimeMetrics;
  logger: Logger;
  registry: Registry;
  /** Sandbox the node's pods (the host can, SANDBOX is not off). */
  sandboxed: boolean;
  /** And limit them with cgroups (the host has a hierarchy the runtime can write). */
  cgroups: boolean;
}

/**
 * One node's reconcile loop: makes the processes of the node match the pods its ledger places
 * there, and reports each pod to the pods bucket. Passes are serialised, and changes that arrive
 * during a pass coalesce into one more pass. The algorithm (which pods, which devices, which
 * command, what changed) is `@gpufleet/node-runtime-core`; this class does what it decides.
 * A runtime holds one per node it runs pods for (PodRuntimeService): each has its own state
 * directory, process table and records, so a node of a simulated fleet behaves like a node
 * with a runtime of its own.
 */
export class NodePods {
  private readonly logger: Logger;
  private readonly config: NodeRuntimeConfig;
  private readonly state: NodeView;
  private readonly metrics: NodeRuntimeMetrics;
  /** Reconcile passes: never overlapping; changes during one make one more; a failed pass is retried after RESYNC_MS. */
  private readonly loop: ReconcileLoop;
  readonly node: string;
  private readonly stateDir: string;
  private readonly runtimeUrl: string;
  private readonly table: ProcessTable;
  private readonly managed = new Map<string, ManagedPod>();
  /** Desired pods that cannot run now, with why. */
  private readonly failed = new Map<string, FailedPodPlan>();
  /** A pod's port for its whole life, across replacements and runtime restarts. */
  private readonly ports = new Map<string, number>();
  /** This node's records in the pods bucket when the runtime started. */
  private readonly previous = new Map<string, PodRuntimeStatus>();
  /** ProcessTable id → pod key. */
  private readonly owners = new Map<string, string>();
  private readonly writer: PodStatusWriter;
  /** The pid last killed to restart a pod's group, so one incarnation is killed once. */
  private readonly groupKilled = new Map<string, number>();
  /** Running pods whose Secret (or one of its keys) is gone: they keep running; warned once. */
  private readonly secretGone = new Set<string>();
  private restored = false;
  private waitingForInventory = false;
  private readonly quiet: boolean;
  private closed = false;
  private readonly sandboxed: boolean;
  private readonly cgroups: boolean;

  constructor(options: NodePodsOptions) {
    const { config, view } = options;
    this.config = config;
    this.state = view;
    this.metrics = options.metrics;
    this.node = view.node;
    this.logger = options.logger.child({ context: 'pods', node: view.node });
    this.loop = new ReconcileLoop({ name: 'pods', logger: this.logger, registry: options.registry, retryMs: RESYNC_MS, resyncMs: RESYNC_MS, pass: () => this.reconcile() });
    this.quiet = isMultiNode(config);
    this.sandboxed = options.sandboxed;
    this.cgroups = options.cgroups;
    this.stateDir = stateDirOf(config, view.node);
    this.runtimeUrl = runtimeUrlOf(config, view.node);
    mkdirSync(this.stateDir, { recursive: true, mode: 0o700 });
    this.table = new ProcessTable(new StateFile(stateFilePath(this.stateDir)), {
      baseEnv: podBaseEnv(process.env),
      killGraceMs: config.STOP_GRACE_S * 1000,
    });
    this.table.on((event) => this.onProcessEvent(event));
    this.writer = new PodStatusWriter(options.pods, {
      render: (key) => this.render(key),
      onError: (key, err) => this.logger.warn(`pod ${key}: status not written, retrying: ${(err as Error).message}`),
    });
    // Ports of this node's pods as an earlier runtime recorded them: a pod keeps its port, so
    // its ProcessSpec (the port is in its arguments) matches and adoption keeps it running.
    for (const [key, record] of options.previous) {
      this.previous.set(key, record);
      this.writer.known(key, record);
      if (record.port > 0) this.ports.set(key, record.port);
      if (record.groupPort > 0) this.ports.set(groupPortKey(key), record.groupPort);
    }
  }

  /** True once the runtime has adopted what an earlier one left and is reconciling. */
  get ready(): boolean {
    return this.restored;
  }

  /** Starts reconciling (the first pass adopts what an earlier runtime left). */
  start(): void {
    this.loop.start();
  }

  /**
   * Runtime shutdown: the pods keep running (detached, recorded in the state file) for the next
   * runtime to adopt. A pass in progress (a pod being stopped) is waited for, at most the grace.
   * Returns how many processes were left running.
   */
  async detach(): Promise<number> {
    this.closed = true;
    await Promise.race([this.loop.stop(), sleep(this.config.STOP_GRACE_S * 1000 + 5_000)]);
    await Promise.race([this.writer.flush(), sleep(2_000)]);
    this.writer.close();
    const running = this.table.list().length;
    this.table.detachAll();
    return running;
  }

  /** Every pod of this node as it is now: the records of the pods bucket, live. */
  statuses(): PodRuntimeStatus[] {
    return [...new Set([...this.managed.keys(), ...this.failed.keys()])]
      .sort()
      .map((key) => this.render(key))
      .filter((s): s is PodRuntimeStatus => s !== undefined);
  }

  /** Where a pod's output is: `main` (engine, instance command; the sshd log for an instance without one) or `sshd`. */
  logFile(ref: Omit<PodRef, 'node'>, which: 'main' | 'sshd' = 'main'): string | undefined {
    const key = podStoreKey({ ...ref, node: this.node });
    const plan = this.managed.get(key)?.plan ?? this.failed.get(key);
    if (!plan) return undefined;
    if (plan.kind === 'instance' && (which === 'sshd' || !plan.command)) return sshdLogFile(this.stateDir, ref);
    if (which === 'sshd') return undefined;
    return podLogFile(this.stateDir, ref);
  }

  /** True while the pod's processes run (or wait to restart); false once it stopped, failed or is gone. */
  isRunning(ref: Omit<PodRef, 'node'>): boolean {
    const status = this.render(podStoreKey({ ...ref, node: this.node }));
    return status !== undefined && status.state !== 'Stopped' && status.state !== 'Failed';
  }

  /** Asks for a reconcile pass; passes never overlap, and requests during one make one more. */
  request(): void {
    if (!this.closed) this.loop.kick();
  }

  private async reconcile(): Promise<void> {
    const desired = desiredPods(this.node, this.state.ledger, this.state.workloads);
    const inventory = this.state.inventory;
    if (!inventory) {
      // Devices cannot be mapped without the inventory: nothing starts (nor is anything an earlier
      // runtime left adopted or killed) until it is published; pods no longer desired still stop.
      if (!this.restored) {
        // One line per node would bury a simulated fleet's log; the service reports the count.
        if (!this.waitingForInventory) this.routine('warn', `node ${this.node} has no inventory in the nodes bucket yet; waiting for it before starting pods`);
        this.waitingForInventory = true;
        return;
      }
      const wanted = new Set(desired.map((d) => d.key));
      await Promise.all(this.knownPods().filter((k) => !wanted.has(k.key)).map((k) => this.stopPod(k.key, true)));
      return;
    }
    const ctx = this.planContext(inventory);
    const plans: PodPlan[] = [];
    for (const pod of desired) plans.push(planPod(pod, await this.portFor(pod.key), ctx, await this.groupOf(pod, inventory)));
    if (this.closed) return;
    if (!this.restored) await this.restore(plans);

    for (const plan of plans) if (plan.kind !== 'failed') this.secretGone.delete(plan.key);
    const changes = diffPods(plans, this.knownPods());
    await Promise.all(changes.stop.map((key) => this.stopPod(key, true)));
    for (const plan of changes.fail) {
      if (this.managed.has(plan.key) && (plan.reason === 'SECRET_NOT_FOUND' || plan.reason === 'WEIGHTS_PENDING')) {
        // Its processes hold the values they started with (and restarts reuse them); only a new
        // start needs the Secret, as on Kubernetes. Likewise the weights: the node cache leases a
        // tree while a pod of the node loads it, so the files it opened stay. Logged once, not on every pass.
        const kept = plan.reason === 'WEIGHTS_PENDING' ? 'the weights' : 'the environment';
        if (!this.secretGone.has(plan.key)) this.logger.warn(`pod ${plan.pod.id} keeps running with ${kept} it started with: ${plan.message}`);
        this.secretGone.add(plan.key);
        continue;
      }
      this.secretGone.delete(plan.key);
      if (this.managed.has(plan.key)) {
        this.logger.warn(`pod ${plan.pod.id} can no longer run as placed, stopping it: ${plan.message}`);
        await this.stopPod(plan.key, false);
      } else if (this.failed.get(plan.key)?.message !== plan.message) {
        this.logger.warn(`pod ${plan.pod.id} cannot start: ${plan.message}`);
      }
      this.failed.set(plan.key, plan);
      this.writer.mark(plan.key);
    }
    await Promise.all(
      changes.replace.map(async (plan) => {
        this.logger.info(`pod ${plan.pod.id}: its template or devices changed; replacing it`);
        await this.stopPod(plan.key, false);
        if (!this.closed) await this.startPod(plan);
      }),
    );
    for (const plan of changes.start) {
      if (this.closed) return;
      await this.startPod(plan);
    }
    this.restartBrokenGroups();
  }

  /**
   * A group member that serves while another member is gone is killed, so that its supervisor
   * restarts it with its backoff and the whole group forms again (`groupRestartReason`): an
   * engine that would only notice the lost rank after a collective timeout does not hang meanwhile.
   */
  private restartBrokenGroups(): void {
    for (const [key, pod] of this.managed) {
      if (pod.plan.kind !== 'engine' || !pod.plan.group) continue;
      const self = this.render(key);
      if (!self) continue;
      const reason = groupRestartReason(self, this.state.groupMembers(pod.plan.pod.ref.namespace, pod.plan.pod.ref.workload));
      const pid = this.table.get(pod.processIds[0])?.status().pid;
      if (!reason || pid === undefined || this.groupKilled.get(key) === pid) continue;
      this.groupKilled.set(key, pid);
      this.logger.warn(`pod ${pod.plan.pod.id}: ${reason}`);
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // It exited meanwhile: its supervisor restarts it anyway.
      }
    }
  }

  /**
   * Once, before anything starts: adopts the processes an earlier runtime left running that are
   * still desired with the same spec, kills the others, then starts what has no process.
   */
  private async restore(plans: readonly PodPlan[]): Promise<void> {
    const prepared: Array<{ plan: RunnablePodPlan; pod: ManagedPod; specs: ProcessSpec[] }> = [];
    for (const plan of plans) {
      if (plan.kind === 'failed') continue;
      try {
        const { pod, specs } = this.prepare(plan);
        prepared.push({ plan, pod, specs });
      } catch (err) {
        this.failed.set(plan.key, failedPlan(plan, err));
        this.writer.mark(plan.key);
      }
    }
    const result = await this.table.restore(prepared.flatMap((p) => p.specs));
    for (const d of result.decisions) this.logger.info(`restore ${d.id}: ${d.action} (${d.reason})`);
    const toStart = new Set(result.toStart.map((s) => s.id));
    for (const { plan, pod, specs } of prepared) {
      const record = this.previous.get(plan.key);
      const missing = specs.filter((s) => toStart.has(s.id));
      if (missing.length === 0 && record) {
        pod.restartsBefore = record.restarts;
        pod.startedAt = record.startedAt;
      }
      try {
        await this.launch(pod, missing);
      } catch (err) {
        this.failed.set(plan.key, failedPlan(plan, err));
      }
      this.writer.mark(plan.key);
    }
    // Pods an earlier runtime ran that are no longer desired: their processes were killed just
    // now; their records and directories go too.
    const wanted = new Set(plans.map((p) => p.key));
    for (const key of [...this.previous.keys()]) {
      if (wanted.has(key)) continue;
      await this.stopPod(key, true);
    }
    this.restored = true;
    const killed = result.decisions.filter((d) => d.action === 'kill').length;
    const message = `restored: ${result.adopted.length} processes adopted, ${result.toStart.length} started, ${killed} killed`;
    if (result.adopted.length + result.toStart.length + killed > 0) this.logger.info(message);
    else this.routine('info', message);
  }

  /** True while the node still waits for its first inventory. */
  get waiting(): boolean {
    return this.waitingForInventory && !this.restored;
  }

  /** A line that matters for a one-node runtime but would repeat per node of a simulated fleet: debug there. */
  private routine(level: 'info' | 'warn', message: string): void {
    if (this.quiet) this.logger.debug(message);
    else this.logger[level](message);
  }

  private async startPod(plan: RunnablePodPlan): Promise<void> {
    try {
      const { pod, specs } = this.prepare(plan);
      await this.launch(pod, specs);
      this.logger.info(`pod ${plan.pod.id} starting on port ${plan.port} with ${JSON.stringify(plan.devicesEnv)}`);
    } catch (err) {
      const failed = failedPlan(plan, err);
      this.logger.warn(`pod ${plan.pod.id} cannot start: ${failed.message}`);
      this.failed.set(plan.key, failed);
    }
    this.writer.mark(plan.key);
  }

  /** Registers the pod and starts `specs` (all of it, or what adoption left); nothing half-started survives a failure. */
  private async launch(pod: ManagedPod, specs: readonly ProcessSpec[]): Promise<void> {
    this.register(pod);
    try {
      for (const spec of specs) this.table.start(spec);
    } catch (err) {
      await this.stopProcesses(pod.plan.key, pod);
      throw err;
    }
    this.failed.delete(pod.plan.key);
  }

  /** The pod's process specs, with its directories and (instances) sshd files written. */
  private prepare(plan: RunnablePodPlan): { pod: ManagedPod; specs: ProcessSpec[] } {
    mkdirSync(podDir(this.stateDir, plan.pod.ref), { recursive: true });
    if (plan.identity) {
      // Root writes these, the pod reads them: its passwd entry and, for engines, its own
      // writable directory (an instance's sshd files are SshdInstance's).
      writeSandboxIdentity(podDir(this.stateDir, plan.pod.ref), plan.identity);
      if (plan.kind === 'engine') {
        const work = podWorkDir(this.stateDir, plan.pod.ref);
        mkdirSync(work, { recursive: true, mode: 0o700 });
        chownSync(work, plan.identity.uid, plan.identity.gid);
      }
    }
    const pod: ManagedPod = { plan, processIds: [], roles: [], sshd: undefined, restartsBefore: 0, startedAt: undefined };
    const specs: ProcessSpec[] = [];
    if (plan.kind === 'engine') {
      specs.push(plan.process);
      pod.roles.push('engine');
    } else {
      const sshd = new SshdInstance({
        id: plan.sshd.name,
        baseDir: plan.sshd.baseDir,
        workDir: plan.sshd.workDir,
        authorizedKeys: plan.sshd.authorizedKeys,
        env: plan.sshd.env,
        listenAddress: plan.sshd.listenAddress,
        logFile: plan.sshd.logFile,
        stopGraceMs: this.config.STOP_GRACE_S * 1000,
        backoff: this.backoff(),
        ...(plan.sshd.sandbox ? { sandbox: plan.sshd.sandbox } : {}),
        ...(plan.sshd.limits ? { limits: plan.sshd.limits } : {}),
      });
      specs.push(sshd.prepare(plan.port));
      pod.sshd = sshd;
      pod.roles.push('sshd');
      if (plan.command) {
        specs.push(plan.command);
        pod.roles.push('command');
      }
    }
    pod.processIds = specs.map((s) => s.id);
    return { pod, specs };
  }

  private register(pod: ManagedPod): void {
    this.managed.set(pod.plan.key, pod);
    for (const id of pod.processIds) this.owners.set(id, pod.plan.key);
  }

  /**
   * Stops a pod's processes (SIGTERM, SIGKILL after STOP_GRACE_S). For good (no longer desired):
   * its record, port, log directory and instance directory (host key included) go too.
   */
  private async stopPod(key: string, forGood: boolean): Promise<void> {
    const pod = this.managed.get(key);
    const ref = pod?.plan.pod.ref ?? this.failed.get(key)?.pod.ref ?? parsePodStoreKey(key);
    if (pod) {
      this.logger.info(`pod ${pod.plan.pod.id}: stopping${forGood ? ' (no longer placed on this node or no longer admitted)' : ''}`);
      await this.stopProcesses(key, pod);
    }
    if (forGood) {
      this.failed.delete(key);
      this.secretGone.delete(key);
      this.ports.delete(key);
      this.ports.delete(groupPortKey(key));
      this.groupKilled.delete(key);
      this.previous.delete(key);
      if (ref) {
        if (pod?.sshd) await pod.sshd.stop();
        else rmSync(join(instancesDir(this.stateDir), instanceName(ref)), { recursive: true, force: true });
        rmSync(podDir(this.stateDir, ref), { recursive: true, force: true });
      }
    }
    this.writer.mark(key);
  }

  private async stopProcesses(key: string, pod: ManagedPod): Promise<void> {
    await Promise.all(pod.processIds.map((id) => this.table.stop(id)));
    for (const id of pod.processIds) this.owners.delete(id);
    if (this.managed.get(key) === pod) this.managed.delete(key);
  }

  private knownPods(): KnownPod[] {
    const known: KnownPod[] = [];
    for (const [key, pod] of this.managed) known.push({ key, launch: pod.plan.launch });
    for (const key of this.failed.keys()) if (!this.managed.has(key)) known.push({ key, launch: undefined });
    return known;
  }

  /**
   * Where a pod of a multi-node replica meets its group: a leader gets a rendezvous port of its
   * own (kept for its life, like its API port); a worker takes its leader's from the leader's record.
   */
  private async groupOf(pod: DesiredPod, inventory: NonNullable<NodeView['inventory']>): Promise<GroupResolution> {
    const workload = this.state.workloads.get(storeKey(workloadKey(pod.ref.namespace, pod.ref.workload)));
    const size = workload?.spec?.podSets.find((s) => s.name === pod.placement.podSet)?.size ?? 1;
    if (size <= 1 || !pod.template.engine) return { kind: 'single' };
    const leaderNode = leaderNodeOf(pod, workload);
    const leader =
      pod.placement.pod > 0 && leaderNode ? this.state.leaderRecord(podStoreKey({ ...pod.ref, node: leaderNode, pod: 0 })) : undefined;
    return resolveGroup({
      pod,
      workload,
      inventory,
      acceleratorIds: pod.placement.acceleratorIds,
      advertiseHost: this.config.ADVERTISE_HOST,
      ...(pod.placement.pod === 0 ? { rendezvousPort: await this.portFor(groupPortKey(pod.key)) } : {}),
      // A leader record of an earlier template or replica is no place to meet: only a live leader's.
      ...(leader && leader.workload === pod.ref.workload && leader.templateHash === pod.template.engine.templateHash ? { leader } : {}),
      mode: pod.template.engine.engine?.multiNode ?? '',
      // The leader: where its workers are (TRT-LLM's mpirun lists every pod's host).
      ...(pod.placement.pod === 0 ? { members: this.state.groupMembers(pod.ref.namespace, pod.ref.workload) } : {}),
    });
  }

  private async portFor(key: string): Promise<number> {
    const known = this.ports.get(key);
    if (known !== undefined) return known;
    const taken = new Set(this.ports.values());
    let port = await freePort();
    // The kernel may hand out a port another pod was given but has not bound yet.
    for (let i = 0; taken.has(port) && i < 10; i++) port = await freePort();
    this.ports.set(key, port);
    return port;
  }

  private planContext(inventory: NonNullable<NodeView['inventory']>): PlanContext {
    const sandbox = this.sandboxed ? this.sandboxContext(inventory) : undefined;
    return {
      ...(sandbox ? { sandbox } : {}),
      inventory,
      stateDir: this.stateDir,
      engineMode: resolveEngineMode(this.config.ENGINE_MODE, inventory),
      engineSim: { ...engineSimEntry(this.config), cwd: REPO_ROOT },
      stopGraceMs: this.config.STOP_GRACE_S * 1000,
      backoff: this.backoff(),
      secrets: this.state.secrets,
      weights: this.state.weights,
      healthIntervalMs: this.config.HEALTH_PROBE_INTERVAL_S * 1000,
      instanceListenAddress: instanceListenAddress(this.config),
      // Engines follow the same rule as sshd: loopback only when the node is advertised on loopback.
      engineListenAddress: instanceListenAddress(this.config),
    };
  }

  /**
   * Every pod's state is hidden from every pod: the whole STATE_DIR (with SIMULATED_NODES, the
   * other nodes' too). A simulated node has no device nodes, so it gets placeholders (empty
   * files, as world-accessible as the real /dev/nvidia*) under `<stateDir>/dev` for its
   * sandboxes to bind: what a pod can open is tested the same way.
   */
  private sandboxContext(inventory: NonNullable<NodeView['inventory']>): PodSandboxContext {
    const simulated = resolveEngineMode('auto', inventory) === 'simulated';
    const deviceRoot = simulated ? join(this.stateDir, 'dev') : '/dev';
    if (simulated) {
      for (const name of inventoryDeviceNodes(inventory)) {
        const path = join(deviceRoot, name);
        if (existsSync(path)) continue;
        mkdirSync(dirname(path), { recursive: true, mode: 0o755 });
        writeFileSync(path, '', { mode: 0o666 });
      }
    }
    return {
      uidBase: this.config.SANDBOX_UID_BASE,
      deviceRoot,
      hidden: [isMultiNode(this.config) ? dirname(this.stateDir) : this.stateDir],
      ...(this.cgroups ? { limits: { pidsMax: this.config.SANDBOX_PIDS_MAX } } : {}),
    };
  }

  private backoff(): { baseMs: number; capMs: number } {
    return { baseMs: this.config.RESTART_BACKOFF_BASE_S * 1000, capMs: this.config.RESTART_BACKOFF_CAP_S * 1000 };
  }

  /** The record of a pod now; undefined when this runtime runs nothing for it (its record is deleted). */
  private render(key: string): PodRuntimeStatus | undefined {
    const pod = this.managed.get(key);
    const plan = pod?.plan ?? this.failed.get(key);
    if (!plan) return undefined;
    const processes: PodProcess[] = [];
    pod?.processIds.forEach((id, i) => {
      const status = this.table.get(id)?.status();
      if (status) processes.push({ role: pod.roles[i], status });
    });
    let sshHostKey: string | undefined;
    try {
      sshHostKey = pod?.sshd?.hostPublicKey;
    } catch {
      sshHostKey = undefined;
    }
    return podRuntimeStatus({
      node: this.node,
      plan,
      processes,
      host: this.config.ADVERTISE_HOST,
      runtimeUrl: this.runtimeUrl,
      ...(plan.kind === 'instance' ? { sshUser: plan.identity?.name ?? SSH_USER, ...(sshHostKey ? { sshHostKey } : {}) } : {}),
      restartsBefore: pod?.restartsBefore ?? 0,
      ...(pod?.startedAt ? { startedAt: pod.startedAt } : {}),
      now: new Date(),
    });
  }

  private onProcessEvent(event: ProcessEvent): void {
    const key = this.owners.get(event.id);
    if (key === undefined) return;
    const pod = this.managed.get(key);
    const plan = pod?.plan;
    if (event.type === 'started' && event.restarts > 0 && !event.adopted && plan) {
      this.metrics.restarts.inc({ namespace: plan.pod.ref.namespace, workload: plan.pod.ref.workload });
    }
    if (event.type === 'exited' && pod && plan && this.table.get(event.id)?.state !== 'Stopping') {
      this.logger.warn(`pod ${plan.pod.id}: ${pod.roles[pod.processIds.indexOf(event.id)] ?? event.id} ${event.exit.reason}`);
    }
    this.writer.mark(key);
  }
}

/**
 * What every pod process starts from: the runtime's environment without its own configuration
 * (NATS credentials, its ports) and without any device visibility variable; the pod's spec adds
 * its devices and its own variables.
 */
export function podBaseEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const own = new Set([...Object.keys(nodeRuntimeConfigSchema.fields), ...DEVICE_VISIBILITY_VARS]);
  const base: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (value !== undefined && !own.has(name)) base[name] = value;
  return base;
}

function failedPlan(plan: RunnablePodPlan, err: unknown): FailedPodPlan {
  const message = (err as { message?: unknown })?.message;
  return {
    kind: 'failed',
    key: plan.key,
    pod: plan.pod,
    port: plan.port,
    templateHash: plan.templateHash,
    devicesEnv: plan.devicesEnv,
    message: typeof message === 'string' ? message : String(err),
  };
}

/** The ports map's key of a leader's rendezvous port. */
function groupPortKey(podKey: string): string {
  return `${podKey}#group`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
