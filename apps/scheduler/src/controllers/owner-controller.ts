import { Inject, Injectable } from '@nestjs/common';
import { NodePhase, type PodRuntimeStatus, type Workload } from '@gpufleet/contracts';
import { ownedBy, type NodeView, type OwnerKind } from '@gpufleet/deployments-core';
import { EventBus, KvMirror, ReconcileLoop, RevisionConflictError, type ReconcilePass } from '@gpufleet/messaging';
import { LOGGER, METRICS_REGISTRY, type Logger, type Registry } from '@gpufleet/observability';
import { CapacityStateService } from '../capacity/capacity-state.service';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { Leadership } from '../leadership/leadership';
import { SchedulingStore } from '../scheduling/scheduling-store.service';
import { WorkloadApiContext } from '../scheduling/workload-api-context';
import { keyOfSpec, storeKey, workloadKey } from '../scheduling/workload-keys';
import { OwnedWorkloads } from './owned-workloads';

/** How often plans are re-run without a change (time alone moves replicas off lost nodes). */
const RESYNC_MS = 1_000;

/** What every owner controller is built from (one injectable, so each kind's constructor stays one line). */
@Injectable()
export class OwnerControllerKit {
  constructor(
    readonly store: SchedulingStore,
    readonly capacity: CapacityStateService,
    readonly ctx: WorkloadApiContext,
    readonly bus: EventBus,
    readonly leadership: Leadership,
    @Inject(SCHEDULER_CONFIG) readonly config: SchedulerConfig,
    @Inject(LOGGER) readonly logger: Logger,
    @Inject(METRICS_REGISTRY) readonly registry: Registry,
  ) {}
}

/** What a pass gives the plan of one record. */
export interface PlanInputs {
  now: number;
  rescheduleAfterMs: number;
  nodeOf: (name: string) => NodeView | undefined;
  /** Pods the node runtimes report for a workload of the record's namespace. */
  podsOf: (namespace: string, workload: string) => PodRuntimeStatus[];
}

/**
 * One kind's controller on the leader (deployments, instances): a ReconcileLoop whose pass plans
 * every record of the kind from the store and carries the plan out, then deletes the kind's
 * workloads whose record is gone. A record that fails is logged and counted without stopping
 * the others. Subclasses give the record mirror and how one record is reconciled.
 */
export abstract class OwnerController<T> {
  protected readonly logger: Logger;
  protected readonly owned: OwnedWorkloads;
  private readonly loop: ReconcileLoop;
  private unsubscribe: Array<() => void> = [];

  protected constructor(
    protected readonly kit: OwnerControllerKit,
    private readonly kind: OwnerKind,
    private readonly records: () => KvMirror<T>,
  ) {
    this.logger = kit.logger.child({ context: `${kind}s` });
    this.owned = new OwnedWorkloads(kind, kit.store, kit.ctx.submitter, this.logger);
    this.loop = new ReconcileLoop({ name: `${kind}s`, logger: this.logger, registry: kit.registry, resyncMs: RESYNC_MS, pass: (run) => this.pass(run) });
  }

  /** The record's uid: only workloads labelled with it are its own. */
  protected abstract uidOf(record: T): string;

  /** One record: plan it and carry the plan out. */
  protected abstract reconcile(key: string, record: T, revision: number, owned: Workload[], inputs: PlanInputs): Promise<void>;

  lead(): void {
    if (this.loop.isActive) return;
    const kick = () => this.loop.kick();
    const { store, capacity } = this.kit;
    // Artifacts too: a deployment's replicas wait for its artifact's model description.
    this.unsubscribe = [this.records().listen(kick), store.workloads.listen(kick), store.pods.listen(kick), store.artifacts.listen(kick), capacity.onNodeChanged(kick)];
    this.loop.start();
  }

  /** Stops at once (a new term may lead again before the pass in progress returns); resolves when that pass has. */
  stepDown(): Promise<void> {
    for (const off of this.unsubscribe.splice(0)) off();
    const stopping = this.loop.stop();
    this.owned.reset();
    return stopping;
  }

  private async pass(run: ReconcilePass): Promise<void> {
    if (!this.kit.leadership.isLeader) return;
    const byOwner = this.owned.byOwner();
    const pods = new Map<string, PodRuntimeStatus[]>();
    for (const { value } of this.kit.store.pods.entries.values()) {
      const key = workloadKey(value.namespace, value.workload);
      pods.set(key, [...(pods.get(key) ?? []), value]);
    }
    const inputs: PlanInputs = {
      now: Date.now(),
      rescheduleAfterMs: this.kit.config.REPLICA_RESCHEDULE_AFTER_S * 1000,
      nodeOf: (name) => {
        const node = this.kit.capacity.model.getNode(name);
        if (!node) return undefined;
        const cordoned = this.kit.capacity.heldBack(name);
        return { ready: node.status?.phase === NodePhase.NODE_PHASE_READY, ...(node.status?.lastTransition ? { since: node.status.lastTransition } : {}), ...(cordoned ? { cordoned } : {}) };
      },
      podsOf: (namespace, workload) => pods.get(workloadKey(namespace, workload)) ?? [],
    };
    await run.each(
      [...this.records().entries],
      ([key]) => `${this.kind} ${key}`,
      async ([key, { value, revision }]) => {
        const labelled = byOwner.get(key) ?? [];
        // Workloads that name this record but not its uid belong to an earlier record of the same
        // name (deleted and created again): they stay in byOwner and go with the orphans below.
        const uid = this.uidOf(value);
        const owned = labelled.filter((w) => ownedBy(w.spec!, uid));
        if (owned.length === labelled.length) byOwner.delete(key);
        else byOwner.set(key, labelled.filter((w) => !ownedBy(w.spec!, uid)));
        await this.reconcile(key, value, revision, owned, inputs);
      },
    );
    if (run.stopped) return;
    // Workloads whose record is gone (removed by hand, or deleted while a pass was creating) or
    // was created again under the same name: nothing will ever own them again.
    const orphans = [...byOwner].flatMap(([owner, list]) => list.map((w) => ({ owner, w })));
    await run.each(
      orphans,
      ({ w }) => `orphaned workload ${keyOfSpec(w.spec!)}`,
      ({ owner, w }) => this.owned.delete(keyOfSpec(w.spec!), `${this.kind} ${owner} no longer exists`),
    );
  }

  /** Removes a finished record with compare-and-set; one that changed meanwhile is planned again by the next pass. */
  protected async removeRecord(key: string, revision: number): Promise<void> {
    try {
      await this.records().store.delete(storeKey(key), revision);
      this.owned.forget(key);
      this.logger.info({ [this.kind]: key }, `${this.kind} ${key} deleted: every replica stopped and released`);
    } catch (err) {
      if (!(err instanceof RevisionConflictError)) throw err;
    }
  }

  /** Writes a record with its new status (compare-and-set); false when it changed meanwhile (the next pass plans again). */
  protected async writeRecord(key: string, record: T, revision: number): Promise<boolean> {
    try {
      await this.records().store.update(storeKey(key), record, revision);
      return true;
    } catch (err) {
      if (err instanceof RevisionConflictError) return false;
      throw err;
    }
  }
}

export function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
