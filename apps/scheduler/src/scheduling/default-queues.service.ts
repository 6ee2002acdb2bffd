import { Inject, Injectable } from '@nestjs/common';
import { WorkloadPhase } from '@gpufleet/contracts';
import { KvMirror, ReconcileLoop, RevisionConflictError, type ReconcilePass } from '@gpufleet/messaging';
import { LOGGER, METRICS_REGISTRY, type Logger, type Registry } from '@gpufleet/observability';
import {
  DEFAULT_LOCAL_QUEUE_NAME,
  defaultLocalQueueFor,
  isDns1123Label,
  planDefaultQueues,
  poolShapeFromCapacity,
  type DefaultQueueState,
  type PoolShape,
} from '@gpufleet/scheduling-core';
import { CapacityStateService } from '../capacity/capacity-state.service';
import { SchedulingStore } from './scheduling-store.service';
import { storeKey, workloadKey } from './workload-keys';

/** How long a replica waits for its own mirror to show a queue it just created. */
const MIRROR_WAIT_MS = 5_000;
/** A pass that failed for another reason than a revision conflict is retried after this long. */
const RETRY_MS = 1_000;

/**
 * Out-of-the-box queues (rules in scheduling-core `default-queues`). On the leader, a pass runs
 * after every pool, queue or workload-deletion change and writes what `planDefaultQueues` asks:
 * default ClusterQueues created, resized and removed, idle default LocalQueues repointed. On
 * every replica, `ensureLocalQueue` creates a namespace's "default" LocalQueue the first time
 * a workload names it. Writes are compare-and-set on the mirrored revision; a conflict is left
 * to the pass the conflicting change triggers.
 */
@Injectable()
export class DefaultQueues {
  private readonly logger: Logger;
  private readonly loop: ReconcileLoop;
  private unsubscribe: Array<() => void> = [];

  constructor(
    private readonly store: SchedulingStore,
    private readonly capacity: CapacityStateService,
    @Inject(LOGGER) logger: Logger,
    @Inject(METRICS_REGISTRY) registry: Registry,
  ) {
    this.logger = logger.child({ context: 'default-queues' });
    this.loop = new ReconcileLoop({ name: 'default-queues', logger: this.logger, registry, retryMs: RETRY_MS, pass: (run) => this.pass(run) });
  }

  lead(): void {
    if (this.loop.isActive) return;
    const kick = (): void => this.loop.kick();
    this.unsubscribe = [
      this.capacity.onNodeChanged(kick),
      this.capacity.onNodeRemoved(kick),
      this.store.clusterQueues.listen(kick),
      this.store.localQueues.listen(kick),
      this.store.workloads.listen((_key, change) => change.kind === 'delete' && kick()),
    ];
    this.loop.start();
  }

  stepDown(): void {
    this.unsubscribe.splice(0).forEach((off) => off());
    void this.loop.stop();
  }

  /**
   * Creates the LocalQueue "default" of `namespace` when it does not exist (and the default
   * ClusterQueue it points at, when the leader has not made it yet), then waits until this
   * replica's mirror shows both, so the validation that follows sees them. Other names, and
   * anything invalid, are left to validation to report.
   */
  async ensureLocalQueue(namespace: string, localQueue: string): Promise<void> {
    if (localQueue !== DEFAULT_LOCAL_QUEUE_NAME || !isDns1123Label(namespace) || !this.store.ready || !this.capacity.ready) return;
    const key = workloadKey(namespace, localQueue);
    if (this.store.localQueues.entries.has(key)) return;
    const made = defaultLocalQueueFor(namespace, this.pools(), [...this.store.clusterQueueLookup.all()]);
    if (!made.ok) return;
    if (made.clusterQueue) {
      await this.createIfAbsent(this.store.clusterQueues, made.clusterQueue.name, made.clusterQueue);
      await this.store.clusterQueues.waitFor(made.clusterQueue.name, MIRROR_WAIT_MS);
    }
    await this.createIfAbsent(this.store.localQueues, key, made.localQueue);
    // Once this replica's mirror shows it, the validation that follows sees it (after the wait, validation says what is missing).
    await this.store.localQueues.waitFor(key, MIRROR_WAIT_MS);
    this.logger.info(`created LocalQueue ${key} → ClusterQueue ${made.localQueue.clusterQueue}`);
  }

  private pools(): PoolShape[] {
    const model = this.capacity.model;
    return model
      .listPools()
      .map((p) => poolShapeFromCapacity(model, p.name))
      .filter((s): s is PoolShape => s !== undefined && s.nodeShapes.length > 0);
  }

  private state(): DefaultQueueState {
    const localQueues = this.store.localQueues.entries;
    const busyClusterQueues = new Set<string>();
    const busyLocalQueues = new Set<string>();
    for (const { value: w } of this.store.workloads.entries.values()) {
      if (!w.spec || w.status?.phase === WorkloadPhase.WORKLOAD_PHASE_FINISHED) continue;
      const lq = workloadKey(w.spec.namespace, w.spec.localQueue);
      busyLocalQueues.add(lq);
      const cq = w.status?.clusterQueue || localQueues.get(lq)?.value.clusterQueue;
      if (cq) busyClusterQueues.add(cq);
    }
    return {
      pools: this.pools(),
      clusterQueues: [...this.store.clusterQueueLookup.all()],
      localQueues: [...localQueues.values()].map((e) => e.value),
      busyClusterQueues,
      busyLocalQueues,
    };
  }

  /**
   * One plan, applied in order: queues to point at first, then LocalQueues, then removals. A
   * write that fails is counted and retried with the next pass; the others go on.
   */
  private async pass(run: ReconcilePass): Promise<void> {
    const plan = planDefaultQueues(this.state());
    const { clusterQueues, localQueues } = this.store;
    await run.each(plan.putClusterQueues, (cq) => `ClusterQueue ${cq.name}`, async (cq) => {
      if (await this.write(clusterQueues, cq.name, cq)) this.logger.info(`ClusterQueue ${cq.name}: pool ${cq.pool}, quota ${cq.nominalQuota}`);
    });
    await run.each(plan.putLocalQueues, (lq) => `LocalQueue ${workloadKey(lq.namespace, lq.name)}`, async (lq) => {
      const key = workloadKey(lq.namespace, lq.name);
      if (await this.write(localQueues, key, lq)) this.logger.info(`LocalQueue ${key} now feeds ClusterQueue ${lq.clusterQueue}`);
    });
    await run.each(plan.deleteClusterQueues, (name) => `ClusterQueue ${name}`, async (name) => {
      if (await this.write(clusterQueues, name, undefined)) this.logger.info(`ClusterQueue ${name} removed: its pool has another queue, or no nodes`);
    });
  }

  /** Put (or delete, with `undefined`) at the mirrored revision; false on a conflict. `key` as the mirror names it. */
  private async write<T>(mirror: KvMirror<T>, key: string, value: T | undefined): Promise<boolean> {
    const revision = mirror.entries.get(key)?.revision;
    try {
      if (value === undefined) await mirror.store.delete(storeKey(key), revision);
      else if (revision === undefined) await mirror.store.create(storeKey(key), value);
      else await mirror.store.update(storeKey(key), value, revision);
      return true;
    } catch (err) {
      if (err instanceof RevisionConflictError) return false;
      throw err;
    }
  }

  private async createIfAbsent<T>(mirror: KvMirror<T>, key: string, value: T): Promise<void> {
    try {
      await mirror.store.create(storeKey(key), value);
    } catch (err) {
      if (!(err instanceof RevisionConflictError)) throw err; // another replica was first
    }
  }
}
