import { Injectable } from '@nestjs/common';
import { DeploymentPhase, Events, ModelDeployment, ModelDeploymentStatus, type Workload } from '@gpufleet/contracts';
import { memoryVerdict, planDeployment, randomSuffix, replicaWorkloadSpec, rolePool, roleResources, sizedRole, withOwnerUid } from '@gpufleet/deployments-core';
import { workloadKey } from '../scheduling/workload-keys';
import { OwnerController, OwnerControllerKit, sameJson, type PlanInputs } from './owner-controller';

/**
 * The leader's deployment controller: plans each ModelDeployment (planDeployment in
 * deployments-core) and carries the plan out: replica workloads created or deleted, status
 * written with compare-and-set and announced, the record removed once its deletion finished.
 */
@Injectable()
export class DeploymentController extends OwnerController<ModelDeployment> {
  constructor(kit: OwnerControllerKit) {
    super(kit, 'deployment', () => kit.store.deployments);
  }

  protected uidOf(deployment: ModelDeployment): string {
    return deployment.uid;
  }

  protected async reconcile(key: string, deployment: ModelDeployment, revision: number, owned: Workload[], inputs: PlanInputs): Promise<void> {
    const spec = deployment.spec!;
    const ns = spec.namespace;
    // Memory sizing from the artifact's model description: holds replicas back while it is
    // pending or says the model does not fit, and names the InstanceType auto tensor parallel chose.
    const memory = spec.artifact ? memoryVerdict(spec, this.kit.ctx.artifactModel(ns, spec.artifact), this.kit.ctx) : undefined;
    const plan = planDeployment({ ...inputs, deployment, workloads: owned, podsOf: (w) => inputs.podsOf(ns, w), ...(memory ? { memory } : {}) });
    for (const d of plan.delete) await this.owned.delete(workloadKey(ns, d.workload), `deployment ${key}: ${d.reason}`);
    for (const c of plan.create) {
      const declared = spec.roles.find((r) => r.role === c.role);
      const role = declared && sizedRole(declared, memory?.roles);
      const resources = role && roleResources(role, this.kit.ctx);
      if (!role || !resources) {
        this.owned.noteFailure(key, `role ${c.role}: its InstanceType ${role?.instanceType ?? ''} no longer exists`, inputs.now);
        continue;
      }
      await this.owned.create(key, withOwnerUid(replicaWorkloadSpec(spec, role, c.ordinal, resources, randomSuffix(), rolePool(role, this.kit.ctx)), deployment.uid), inputs.now);
    }
    const failure = this.owned.failureOf(key);
    if (failure) for (const r of plan.status.replicas) if (r.workload === '' && r.state === 'Pending') r.message = `cannot be created: ${failure}`;
    if (plan.removeRecord) await this.removeRecord(key, revision);
    else await this.writeStatus(key, deployment, revision, plan.status);
  }

  private async writeStatus(key: string, d: ModelDeployment, revision: number, status: ModelDeploymentStatus): Promise<void> {
    if (d.status && sameJson(ModelDeploymentStatus.toJSON(d.status), ModelDeploymentStatus.toJSON(status))) return;
    if (!(await this.writeRecord(key, { ...d, status }, revision))) return; // the spec changed; the next pass plans again
    const before = d.status;
    if (!before || before.phase !== status.phase || before.readyReplicas !== status.readyReplicas) {
      this.logger.info({ deployment: key }, `deployment ${key}: ${phaseName(status.phase)}, ${status.readyReplicas}/${status.desiredReplicas} ready`);
      this.kit.bus.publish(Events.deploymentStatusChanged, { cluster: this.kit.config.GPUFLEET_CLUSTER, deployment: { ...d, status } });
    }
  }
}

function phaseName(phase: DeploymentPhase): string {
  return phase.replace('DEPLOYMENT_PHASE_', '');
}
