import { Injectable } from '@nestjs/common';
import { Events, GPUInstance, GPUInstanceStatus, InstancePhase, type Workload } from '@gpufleet/contracts';
import { instancePool, instanceResources, instanceWorkloadSpec, planInstance, randomSuffix, withOwnerUid } from '@gpufleet/deployments-core';
import { workloadKey } from '../scheduling/workload-keys';
import { OwnerController, OwnerControllerKit, sameJson, type PlanInputs } from './owner-controller';

/**
 * The leader's instance controller: plans each GPUInstance (planInstance in deployments-core)
 * and carries the plan out: its workload created (again after a stop/start or a lost node) or
 * deleted, status written with compare-and-set and announced, the record removed once its
 * deletion finished.
 */
@Injectable()
export class InstanceController extends OwnerController<GPUInstance> {
  constructor(kit: OwnerControllerKit) {
    super(kit, 'instance', () => kit.store.instances);
  }

  protected uidOf(instance: GPUInstance): string {
    return instance.uid;
  }

  protected async reconcile(key: string, instance: GPUInstance, revision: number, owned: Workload[], inputs: PlanInputs): Promise<void> {
    const spec = instance.spec!;
    const ns = spec.namespace;
    const plan = planInstance({ ...inputs, instance, workloads: owned, podsOf: (w) => inputs.podsOf(ns, w) });
    for (const d of plan.delete) await this.owned.delete(workloadKey(ns, d.workload), `instance ${key}: ${d.reason}`);
    if (plan.create) {
      const resources = instanceResources(spec, this.kit.ctx);
      if (!resources) this.owned.noteFailure(key, `its InstanceType ${spec.instanceType} no longer exists`, inputs.now);
      else await this.owned.create(key, withOwnerUid(instanceWorkloadSpec(spec, resources, randomSuffix(), instancePool(spec, this.kit.ctx)), instance.uid), inputs.now);
    }
    const failure = this.owned.failureOf(key);
    if (failure && plan.status.phase === InstancePhase.INSTANCE_PHASE_PENDING && plan.create) plan.status.message = `cannot be created: ${failure}`;
    if (plan.removeRecord) await this.removeRecord(key, revision);
    else await this.writeStatus(key, instance, revision, plan.status);
  }

  private async writeStatus(key: string, i: GPUInstance, revision: number, status: GPUInstanceStatus): Promise<void> {
    if (i.status && sameJson(GPUInstanceStatus.toJSON(i.status), GPUInstanceStatus.toJSON(status))) return;
    if (!(await this.writeRecord(key, { ...i, status }, revision))) return;
    if (!i.status || i.status.phase !== status.phase || i.status.sshPort !== status.sshPort || i.status.sshHost !== status.sshHost) {
      this.logger.info({ instance: key }, `instance ${key}: ${status.phase.replace('INSTANCE_PHASE_', '')}${status.message ? ` (${status.message})` : ''}`);
      this.kit.bus.publish(Events.instanceStatusChanged, { cluster: this.kit.config.GPUFLEET_CLUSTER, instance: { ...i, status } });
    }
  }
}
