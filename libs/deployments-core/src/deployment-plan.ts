/**
 * The deployment controller's decisions, as a pure function of what the store holds: which
 * replica workloads to create or delete, and the deployment's status. The scheduler leader runs
 * it whenever a deployment, one of its workloads, one of their pods or a node changes.
 */
import {
  DeploymentPhase,
  OwnerLabels,
  type ModelDeployment,
  type ModelDeploymentStatus,
  type PodRuntimeStatus,
  type ReplicaStatus,
  type Workload,
} from '@gpufleet/contracts';
import { condition, weightsReadyCondition } from './conditions';
import { sizedRole, type MemoryVerdict } from './memory-sizing';
import { deploymentTemplateHash, templateHash } from './template-hash';
import { endpointOf, logsUrlOf, ownedState, replicaState, type NodeView, type OwnedState, type RecoveryPolicy } from './replica-state';

export interface DeploymentPlanInput extends RecoveryPolicy {
  deployment: ModelDeployment;
  /** Workloads labelled as this deployment's replicas. */
  workloads: readonly Workload[];
  /** Runtime records of each workload's pods, by workload name. */
  podsOf: (workload: string) => readonly PodRuntimeStatus[];
  nodeOf: (name: string) => NodeView | undefined;
  /** For a deployment that names an artifact: its memory verdict (memoryVerdict); replicas are held back when it does not admit. */
  memory?: MemoryVerdict;
}

export interface DeploymentPlan {
  create: Array<{ role: string; ordinal: number }>;
  delete: Array<{ workload: string; reason: string }>;
  status: ModelDeploymentStatus;
  /** Deletion finished: every replica's workload is gone; remove the record. */
  removeRecord: boolean;
  /** Replicas the memory verdict keeps from being created, and why. */
  held?: { create: Array<{ role: string; ordinal: number }>; message: string };
}

interface Replica {
  workload: Workload;
  name: string;
  role: string;
  ordinal: number;
  updated: boolean;
  state: OwnedState;
}

const RANK_READY = 4;

/** Which of two workloads for one ordinal to keep: updated and ready first, then the newest. */
function rank(r: Replica): number {
  return (r.updated ? 8 : 0) + (r.state.kind === 'running' && r.state.state === 'Ready' ? RANK_READY : 0) + (r.state.kind === 'running' ? 2 : 0);
}

function isReady(r: Replica): boolean {
  return r.state.kind === 'running' && r.state.state === 'Ready';
}

export function planDeployment(input: DeploymentPlanInput): DeploymentPlan {
  const { deployment } = input;
  const spec = deployment.spec!;
  const plan: DeploymentPlan = { create: [], delete: [], status: undefined as unknown as ModelDeploymentStatus, removeRecord: false };
  // Replicas run the role with the InstanceType auto tensor parallel chose, and carry its hash.
  const hashOf = new Map(spec.roles.map((r) => [r.role, templateHash(spec, sizedRole(r, input.memory?.roles))]));
  const replicas: Replica[] = input.workloads.map((w) => {
    const labels = w.spec?.labels ?? {};
    const role = labels[OwnerLabels.role] ?? '';
    return {
      workload: w,
      name: w.spec?.name ?? '',
      role,
      ordinal: Number(labels[OwnerLabels.ordinal] ?? -1),
      updated: w.spec?.template?.engine?.templateHash === hashOf.get(role),
      state: ownedState(w, input.podsOf(w.spec?.name ?? ''), input.nodeOf, input),
    };
  });
  const deleting = deployment.deletionRequestedAt !== undefined;

  if (deleting) {
    for (const r of replicas) plan.delete.push({ workload: r.name, reason: 'the deployment is being deleted' });
    plan.removeRecord = replicas.length === 0;
  } else {
    decideReplicas(spec.roles.map((r) => ({ role: r.role, replicas: r.replicas })), replicas, plan);
    if (input.memory && !input.memory.admit) holdBack(plan, input.memory);
  }
  plan.status = statusOf(input, replicas, plan, deleting);
  return plan;
}

function decideReplicas(roles: ReadonlyArray<{ role: string; replicas: number }>, all: Replica[], plan: DeploymentPlan): void {
  const remove = (r: Replica, reason: string): void => {
    plan.delete.push({ workload: r.name, reason });
  };
  const desiredRoles = new Map(roles.map((r) => [r.role, r.replicas]));
  const kept: Replica[] = [];
  for (const r of all) {
    const desired = desiredRoles.get(r.role);
    if (desired === undefined) remove(r, `role "${r.role}" is no longer in the spec`);
    else if (!(r.ordinal >= 0 && r.ordinal < desired)) remove(r, `scaled down to ${desired} replicas`);
    else if (r.state.kind === 'finished') remove(r, r.state.message);
    else if (r.state.kind === 'lost' && r.state.moveNow) remove(r, r.state.message);
    else kept.push(r);
  }
  // One workload per ordinal; a second can exist after an interrupted replacement.
  const byOrdinal = new Map<string, Replica>();
  for (const r of kept) {
    const key = `${r.role}/${r.ordinal}`;
    const other = byOrdinal.get(key);
    if (!other) byOrdinal.set(key, r);
    else if (rank(r) > rank(other) || (rank(r) === rank(other) && submitted(r) > submitted(other))) {
      remove(other, `replaced by ${r.name} for ordinal ${r.ordinal}`);
      byOrdinal.set(key, r);
    } else remove(r, `duplicate of ${other.name} for ordinal ${r.ordinal}`);
  }
  for (const { role, replicas } of roles) {
    for (let ordinal = 0; ordinal < replicas; ordinal++) {
      if (!byOrdinal.has(`${role}/${ordinal}`)) plan.create.push({ role, ordinal });
    }
  }
  // Rolling update, one replica at a time: a stale replica that is not serving anyway is
  // replaced at once; a serving one only when every updated replica is Ready (and no
  // replica is being created), so capacity drops by at most one replica meanwhile.
  const live = [...byOrdinal.values()];
  const stale = live.filter((r) => !r.updated).sort((a, b) => a.ordinal - b.ordinal || a.role.localeCompare(b.role));
  for (const r of stale.filter((s) => !isReady(s))) {
    remove(r, 'replaced by the current template (it was not serving)');
    plan.create.push({ role: r.role, ordinal: r.ordinal });
  }
  const settled = plan.create.length === 0 && live.filter((r) => r.updated).every(isReady);
  const next = stale.find(isReady);
  if (settled && next) {
    remove(next, 'rolling update: replaced by the current template');
    plan.create.push({ role: next.role, ordinal: next.ordinal });
  }
}

/**
 * No replica is created while the memory estimate is pending or says the model does not fit, and
 * none is replaced (a replacement could not be created): replicas already running stay.
 */
function holdBack(plan: DeploymentPlan, memory: MemoryVerdict): void {
  // A replica being replaced by the current template would not come back: it stays.
  plan.delete = plan.delete.filter((d) => !d.reason.includes('replaced by the current template'));
  plan.held = { create: plan.create, message: memory.message };
  plan.create = [];
}

function submitted(r: Replica): number {
  return r.workload.status?.submittedAt?.getTime() ?? 0;
}

function statusOf(input: DeploymentPlanInput, replicas: Replica[], plan: DeploymentPlan, deleting: boolean): ModelDeploymentStatus {
  const spec = input.deployment.spec!;
  const previous = input.deployment.status;
  const now = new Date(input.now);
  const deleted = new Set(plan.delete.map((d) => d.workload));
  const rows: ReplicaStatus[] = replicas
    .map((r): ReplicaStatus => {
      const pod0 = r.state.kind === 'running' ? r.state.pod0 : undefined;
      const terminating = deleted.has(r.name);
      return {
        role: r.role,
        ordinal: r.ordinal,
        workload: r.name,
        state: terminating && r.state.kind !== 'lost' ? 'Terminating' : replicaState(r.state),
        node: r.state.kind === 'running' || r.state.kind === 'lost' ? r.state.node : '',
        endpoint: endpointOf(pod0),
        acceleratorIds: (r.workload.status?.placements ?? []).flatMap((p) => p.acceleratorIds),
        restarts: r.state.kind === 'running' ? r.state.restarts : 0,
        message: terminating ? (plan.delete.find((d) => d.workload === r.name)?.reason ?? '') : r.state.message,
        updated: r.updated,
        logsUrl: logsUrlOf(pod0),
      };
    })
    .sort((a, b) => a.role.localeCompare(b.role) || a.ordinal - b.ordinal || a.workload.localeCompare(b.workload));
  // Ordinals about to be created (or held back) show as Pending so the table lists every desired replica.
  const pending = [...plan.create.map((c) => ({ ...c, message: 'being created' })), ...(plan.held?.create ?? []).map((c) => ({ ...c, message: `held back: ${plan.held!.message}` }))];
  for (const c of pending) {
    if (!rows.some((r) => r.role === c.role && r.ordinal === c.ordinal && r.state !== 'Terminating')) {
      rows.push({ role: c.role, ordinal: c.ordinal, workload: '', state: 'Pending', node: '', endpoint: '', acceleratorIds: [], restarts: 0, message: c.message, updated: true, logsUrl: '' });
    }
  }
  const desired = spec.roles.reduce((n, r) => n + r.replicas, 0);
  const serving = rows.filter((r) => r.state !== 'Terminating');
  const ready = serving.filter((r) => r.state === 'Ready').length;
  const updated = serving.filter((r) => r.updated && r.workload !== '').length;
  const degraded = serving.some((r) => r.state === 'Restarting' || r.state === 'Failed' || r.state === 'Lost');
  const allReady = ready === desired && updated === desired && serving.length === desired && plan.create.length === 0 && plan.delete.length === 0 && !plan.held;
  const phase = deleting
    ? DeploymentPhase.DEPLOYMENT_PHASE_DELETING
    : degraded
      ? DeploymentPhase.DEPLOYMENT_PHASE_DEGRADED
      : allReady
        ? DeploymentPhase.DEPLOYMENT_PHASE_READY
        : DeploymentPhase.DEPLOYMENT_PHASE_STARTING;
  const servingRole = spec.roles.some((r) => r.role === 'server') ? 'server' : 'decode';
  const firstProblem = serving.find((r) => r.state !== 'Ready');
  const conditions = [
    condition(previous?.conditions, 'Available', ready > 0, ready > 0 ? 'ReplicasReady' : 'NoReplicaReady', `${ready} of ${desired} replicas ready`, now),
    condition(
      previous?.conditions,
      'Progressing',
      phase === DeploymentPhase.DEPLOYMENT_PHASE_STARTING,
      phase === DeploymentPhase.DEPLOYMENT_PHASE_STARTING ? 'RolloutInProgress' : 'RolloutSettled',
      `${updated} of ${desired} replicas run the current template`,
      now,
    ),
    condition(
      previous?.conditions,
      'ReplicasReady',
      allReady,
      allReady ? 'AllReady' : degraded ? 'ReplicaUnhealthy' : 'Waiting',
      firstProblem ? `${firstProblem.role} ${firstProblem.ordinal}: ${firstProblem.state}${firstProblem.message ? ` (${firstProblem.message})` : ''}` : '',
      now,
    ),
    // Only for deployments that name an artifact: the others' conditions stay as they were.
    ...(spec.artifact ? [weightsReadyCondition(previous?.conditions, spec.artifact, serving, now)] : []),
    // MemoryFits: True with the per-GPU need, False with the numbers (INSUFFICIENT_GPU_MEMORY) or
    // while the estimate is pending (EstimatePending) or cannot be made (NotEstimated).
    ...(input.memory ? [condition(previous?.conditions, 'MemoryFits', input.memory.fits, input.memory.reason, input.memory.message, now)] : []),
  ];
  return {
    phase,
    desiredReplicas: desired,
    readyReplicas: ready,
    updatedReplicas: updated,
    replicas: rows,
    conditions,
    observedGeneration: input.deployment.generation,
    endpoints: rows.filter((r) => r.state === 'Ready' && r.role === servingRole && r.endpoint).map((r) => r.endpoint),
    templateHash: deploymentTemplateHash(spec),
    memory: (input.memory?.roles ?? []).flatMap((r) => (r.estimate ? [r.estimate] : [])),
  };
}
