import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  DeploymentPhase,
  Events,
  GPUInstance,
  GPUInstanceStatus,
  InstancePhase,
  ModelDeployment,
  ModelDeploymentStatus,
  NodePhase,
  OwnerLabels,
  PodRuntimeStatus,
  Workload,
  WorkloadSpec,
} from '@gpufleet/contracts';
import { EventBus, RevisionConflictError } from '@gpufleet/messaging';
import {
  instanceResources,
  instanceWorkloadSpec,
  planDeployment,
  planInstance,
  randomSuffix,
  replicaWorkloadSpec,
  roleResources,
  type NodeView,
} from '@gpufleet/deployments-core';
import { CapacityStateService } from '../capacity/capacity-state.service';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { SchedulingStore } from './scheduling-store.service';
import { WorkloadApiContext } from './workload-api-context';
import { keyOfSpec, storeKey, workloadKey } from './workload-keys';

/** How often plans are re-run without a change (time alone moves replicas off lost nodes). */
const TICK_MS = 1_000;
/** A replica workload that could not be created is retried after this long. */
const CREATE_RETRY_MS = 5_000;

/**
 * The leader's deployment and instance controllers. Each pass plans every deployment and
 * instance from the store (planDeployment / planInstance in deployments-core) and carries the
 * plan out: replica workloads created or deleted, status written with compare-and-set, records
 * of finished deletions removed. Writes the mirrors have not shown yet are overlaid, so a pass
 * that runs before its predecessor's writes come back neither creates nor deletes twice.
 */
@Injectable()
export class OwnerControllers {
  private readonly logger = new Logger('owners');
  private leading = false;
  private unsubscribe: Array<() => void> = [];
  private timer?: NodeJS.Timeout;
  private running = false;
  private dirty = false;
  private readonly created = new Map<string, Workload>();
  private readonly deleted = new Set<string>();
  private readonly createFailures = new Map<string, { at: number; message: string }>();

  constructor(
    private readonly store: SchedulingStore,
    private readonly capacity: CapacityStateService,
    private readonly ctx: WorkloadApiContext,
    private readonly bus: EventBus,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  lead(): void {
    if (this.leading) return;
    this.leading = true;
    const kick = () => this.kick();
    this.unsubscribe = [
      this.store.deployments.listen(kick),
      this.store.instances.listen(kick),
      this.store.workloads.listen(kick),
      this.store.pods.listen(kick),
      this.capacity.onNodeChanged(kick),
    ];
    this.timer = setInterval(kick, TICK_MS);
    this.timer.unref();
    this.kick();
  }

  stepDown(): void {
    this.leading = false;
    for (const off of this.unsubscribe) off();
    this.unsubscribe = [];
    if (this.timer) clearInterval(this.timer);
    this.created.clear();
    this.deleted.clear();
  }

  private kick(): void {
    if (!this.leading) return;
    this.dirty = true;
    if (this.running) return;
    this.running = true;
    setImmediate(() => void this.loop());
  }

  private async loop(): Promise<void> {
    try {
      while (this.dirty && this.leading) {
        this.dirty = false;
        await this.pass().catch((err: unknown) => this.logger.error(`controller pass failed: ${(err as Error).stack ?? err}`));
      }
    } finally {
      this.running = false;
    }
  }

  /** The workloads as the store will hold them once this controller's writes land. */
  private workloadsView(): Map<string, Workload> {
    const view = new Map<string, Workload>();
    for (const [key, { value }] of this.store.workloads.entries) {
      this.created.delete(key);
      if (!this.deleted.has(key)) view.set(key, value);
    }
    for (const key of this.deleted) if (!this.store.workloads.entries.has(key)) this.deleted.delete(key);
    for (const [key, w] of this.created) view.set(key, w);
    return view;
  }

  private async pass(): Promise<void> {
    const now = Date.now();
    const workloads = this.workloadsView();
    const byOwner = new Map<string, Workload[]>();
    for (const w of workloads.values()) {
      const labels = w.spec?.labels ?? {};
      const owner = labels[OwnerLabels.deployment] ? `d:${w.spec!.namespace}/${labels[OwnerLabels.deployment]}` : labels[OwnerLabels.instance] ? `i:${w.spec!.namespace}/${labels[OwnerLabels.instance]}` : undefined;
      if (!owner) continue;
      const list = byOwner.get(owner) ?? [];
      list.push(w);
      byOwner.set(owner, list);
    }
    const pods = new Map<string, PodRuntimeStatus[]>();
    for (const { value } of this.store.pods.entries.values()) {
      const key = workloadKey(value.namespace, value.workload);
      const list = pods.get(key) ?? [];
      list.push(value);
      pods.set(key, list);
    }
    const nodeOf = (name: string): NodeView | undefined => {
      const node = this.capacity.model.getNode(name);
      if (!node) return undefined;
      return { ready: node.status?.phase === NodePhase.NODE_PHASE_READY, ...(node.status?.lastTransition ? { since: node.status.lastTransition } : {}) };
    };
    const policy = { now, rescheduleAfterMs: this.config.REPLICA_RESCHEDULE_AFTER_S * 1000 };

    for (const [key, { value: deployment, revision }] of [...this.store.deployments.entries]) {
      if (!this.leading) return;
      const owned = byOwner.get(`d:${key}`) ?? [];
      byOwner.delete(`d:${key}`);
      const ns = deployment.spec!.namespace;
      const plan = planDeployment({ ...policy, deployment, workloads: owned, podsOf: (w) => pods.get(workloadKey(ns, w)) ?? [], nodeOf });
      for (const d of plan.delete) await this.deleteWorkload(workloadKey(ns, d.workload), `deployment ${key}: ${d.reason}`);
      for (const c of plan.create) {
        const role = deployment.spec!.roles.find((r) => r.role === c.role);
        const resources = role && roleResources(role, this.ctx);
        if (!role || !resources) {
          this.createFailures.set(key, { at: now, message: `role ${c.role}: its InstanceType ${role?.instanceType ?? ''} no longer exists` });
          continue;
        }
        await this.createWorkload(key, replicaWorkloadSpec(deployment.spec!, role, c.ordinal, resources, randomSuffix()), now);
      }
      const failure = this.createFailures.get(key);
      if (failure) for (const r of plan.status.replicas) if (r.workload === '' && r.state === 'Pending') r.message = `cannot be created: ${failure.message}`;
      if (plan.removeRecord) await this.removeRecord('deployment', key, revision, () => this.store.deployments.store.delete(storeKey(key), revision));
      else await this.writeDeploymentStatus(key, deployment, revision, plan.status);
    }

    for (const [key, { value: instance, revision }] of [...this.store.instances.entries]) {
      if (!this.leading) return;
      const owned = byOwner.get(`i:${key}`) ?? [];
      byOwner.delete(`i:${key}`);
      const ns = instance.spec!.namespace;
      const plan = planInstance({ ...policy, instance, workloads: owned, podsOf: (w) => pods.get(workloadKey(ns, w)) ?? [], nodeOf });
      for (const d of plan.delete) await this.deleteWorkload(workloadKey(ns, d.workload), `instance ${key}: ${d.reason}`);
      if (plan.create) {
        const resources = instanceResources(instance.spec!, this.ctx);
        if (!resources) this.createFailures.set(key, { at: now, message: `its InstanceType ${instance.spec!.instanceType} no longer exists` });
        else await this.createWorkload(key, instanceWorkloadSpec(instance.spec!, resources, randomSuffix()), now);
      }
      const failure = this.createFailures.get(key);
      if (failure && plan.status.phase === InstancePhase.INSTANCE_PHASE_PENDING && plan.create) plan.status.message = `cannot be created: ${failure.message}`;
      if (plan.removeRecord) await this.removeRecord('instance', key, revision, () => this.store.instances.store.delete(storeKey(key), revision));
      else await this.writeInstanceStatus(key, instance, revision, plan.status);
    }

    // Workloads whose deployment or instance record is gone (removed by hand, or a record
    // deleted while a pass was creating): nothing will ever own them again.
    for (const [owner, list] of byOwner) {
      for (const w of list) await this.deleteWorkload(keyOfSpec(w.spec!), `${owner.startsWith('d:') ? 'deployment' : 'instance'} ${owner.slice(2)} no longer exists`);
    }
  }

  private async createWorkload(ownerKey: string, spec: WorkloadSpec, now: number): Promise<void> {
    const failure = this.createFailures.get(ownerKey);
    if (failure && now - failure.at < CREATE_RETRY_MS) return;
    try {
      const workload = await this.ctx.submitter.submit(spec);
      this.created.set(keyOfSpec(spec), workload);
      this.createFailures.delete(ownerKey);
      this.logger.log(`${ownerKey}: created workload ${spec.name}`);
    } catch (err) {
      const message = (err as Error).message;
      this.createFailures.set(ownerKey, { at: now, message });
      this.logger.warn(`${ownerKey}: workload ${spec.name} not created: ${message}`);
    }
  }

  private async deleteWorkload(key: string, why: string): Promise<void> {
    if (this.deleted.has(key)) return;
    this.deleted.add(key);
    this.created.delete(key);
    try {
      await this.store.workloads.store.delete(storeKey(key));
      this.logger.log(`deleted workload ${key}: ${why}`);
    } catch (err) {
      this.deleted.delete(key);
      this.logger.warn(`workload ${key} not deleted (${why}): ${(err as Error).message}`);
    }
  }

  private async removeRecord(kind: string, key: string, revision: number, remove: () => Promise<void>): Promise<void> {
    try {
      await remove();
      this.createFailures.delete(key);
      this.logger.log(`${kind} ${key} deleted: every replica stopped and released`);
    } catch (err) {
      if (!(err instanceof RevisionConflictError)) throw err;
      // Changed meanwhile (revision ${revision}); the next pass sees the change.
    }
  }

  private async writeDeploymentStatus(key: string, d: ModelDeployment, revision: number, status: ModelDeploymentStatus): Promise<void> {
    if (d.status && sameJson(ModelDeploymentStatus.toJSON(d.status), ModelDeploymentStatus.toJSON(status))) return;
    try {
      await this.store.deployments.store.update(storeKey(key), { ...d, status }, revision);
    } catch (err) {
      if (err instanceof RevisionConflictError) return; // the spec changed; the next pass plans again
      throw err;
    }
    const before = d.status;
    if (!before || before.phase !== status.phase || before.readyReplicas !== status.readyReplicas) {
      this.logger.log(`deployment ${key}: ${phaseName(status.phase)}, ${status.readyReplicas}/${status.desiredReplicas} ready`);
      this.bus.publish(Events.deploymentStatusChanged, { cluster: this.config.GPUFLEET_CLUSTER, deployment: { ...d, status } });
    }
  }

  private async writeInstanceStatus(key: string, i: GPUInstance, revision: number, status: GPUInstanceStatus): Promise<void> {
    if (i.status && sameJson(GPUInstanceStatus.toJSON(i.status), GPUInstanceStatus.toJSON(status))) return;
    try {
      await this.store.instances.store.update(storeKey(key), { ...i, status }, revision);
    } catch (err) {
      if (err instanceof RevisionConflictError) return;
      throw err;
    }
    if (!i.status || i.status.phase !== status.phase || i.status.sshPort !== status.sshPort) {
      this.logger.log(`instance ${key}: ${status.phase.replace('INSTANCE_PHASE_', '')}${status.message ? ` (${status.message})` : ''}`);
      this.bus.publish(Events.instanceStatusChanged, { cluster: this.config.GPUFLEET_CLUSTER, instance: { ...i, status } });
    }
  }
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function phaseName(phase: DeploymentPhase): string {
  return phase.replace('DEPLOYMENT_PHASE_', '');
}
