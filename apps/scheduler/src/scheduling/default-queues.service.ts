import { Injectable, Logger } from '@nestjs/common';
import { WorkloadPhase } from '@gpufleet/contracts';
import { RevisionConflictError } from '@gpufleet/messaging';
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
import { Mirror, SchedulingStore } from './scheduling-store.service';
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
  private readonly logger = new Logger('default-queues');
  private unsubscribe: Array<() => void> = [];
  private leading = false;
  private running = false;
  private dirty = false;

  constructor(
    private readonly store: SchedulingStore,
    private readonly capacity: CapacityStateService,
  ) {}

  lead(): void {
    if (this.leading) return;
    this.leading = true;
    const kick = (): void => this.kick();
    this.unsubscribe = [
      this.capacity.onNodeChanged(kick),
      this.capacity.onNodeRemoved(kick),
      this.store.clusterQueues.listen(kick),
      this.store.localQueues.listen(kick),
      this.store.workloads.listen((_key, change) => change.kind === 'delete' && kick()),
    ];
    kick();
  }

  stepDown(): void {
    this.leading = false;
    this.unsubscribe.splice(0).forEach((off) => off());
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
    const made = defaultLocalQueueFor(namespace, this.pools(), [...this.store.clusterQueues.entries.values()].map((e) => e.value));
    if (!made.ok) return;
    if (made.clusterQueue) {
      await this.createIfAbsent(this.store.clusterQueues, made.clusterQueue.name, made.clusterQueue);
      await mirrored(this.store.clusterQueues, made.clusterQueue.name);
    }
    await this.createIfAbsent(this.store.localQueues, key, made.localQueue);
    await mirrored(this.store.localQueues, key);
    this.logger.log(`created LocalQueue ${key} → ClusterQueue ${made.localQueue.clusterQueue}`);
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
      clusterQueues: [...this.store.clusterQueues.entries.values()].map((e) => e.value),
      localQueues: [...localQueues.values()].map((e) => e.value),
      busyClusterQueues,
      busyLocalQueues,
    };
  }

  private kick(): void {
    if (!this.leading) return;
    this.dirty = true;
    if (this.running) return;
    this.running = true;
    setImmediate(() => void this.drain());
  }

  private async drain(): Promise<void> {
    try {
      while (this.dirty && this.leading) {
        this.dirty = false;
        await this.pass();
      }
    } catch (err) {
      this.logger.warn(`default queues not reconciled, retrying: ${(err as Error).message}`);
      setTimeout(() => this.kick(), RETRY_MS).unref();
    } finally {
      this.running = false;
    }
  }

  /** One plan, applied in order: queues to point at first, then LocalQueues, then removals. */
  private async pass(): Promise<void> {
    const plan = planDefaultQueues(this.state());
    const { clusterQueues, localQueues } = this.store;
    for (const cq of plan.putClusterQueues) {
      if (await this.write(clusterQueues, cq.name, cq)) this.logger.log(`ClusterQueue ${cq.name}: pool ${cq.pool}, quota ${cq.nominalQuota}`);
    }
    for (const lq of plan.putLocalQueues) {
      const key = workloadKey(lq.namespace, lq.name);
      if (await this.write(localQueues, key, lq)) this.logger.log(`LocalQueue ${key} now feeds ClusterQueue ${lq.clusterQueue}`);
    }
    for (const name of plan.deleteClusterQueues) {
      if (await this.write(clusterQueues, name, undefined)) this.logger.log(`ClusterQueue ${name} removed: its pool has another queue, or no nodes`);
    }
  }

  /** Put (or delete, with `undefined`) at the mirrored revision; false on a conflict. `key` as the mirror names it. */
  private async write<T>(mirror: Mirror<T>, key: string, value: T | undefined): Promise<boolean> {
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

  private async createIfAbsent<T>(mirror: Mirror<T>, key: string, value: T): Promise<void> {
    try {
      await mirror.store.create(storeKey(key), value);
    } catch (err) {
      if (!(err instanceof RevisionConflictError)) throw err; // another replica was first
    }
  }
}

/** Resolves once `mirror` holds `key` (or after MIRROR_WAIT_MS; validation then says what is missing). */
function mirrored<T>(mirror: Mirror<T>, key: string): Promise<void> {
  if (mirror.entries.has(key)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      stop();
      resolve();
    };
    const timer = setTimeout(done, MIRROR_WAIT_MS);
    const stop = mirror.listen((k) => k === key && done());
  });
}
