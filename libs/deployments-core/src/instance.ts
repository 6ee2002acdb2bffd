/**
 * GPU instances: validation, the workload that holds an instance's devices, and the instance
 * controller's decisions (pure, like planDeployment).
 */
import {
  InstancePhase,
  OwnerLabels,
  type GPUInstance,
  type GPUInstanceSpec,
  type GPUInstanceStatus,
  type PodResources,
  type PodRuntimeStatus,
  type Workload,
  type WorkloadSpec,
} from '@gpufleet/contracts';
import { checkDns1123Label, checkIntegerRange, problem, shown, type ValidationProblem } from '@gpufleet/scheduling-core';
import { DEFAULT_LOCAL_QUEUE, type DeploymentValidationContext } from './deployment-spec';
import { checkEnv, checkLabels, DEVICE_VISIBILITY_ENV } from './limits';
import { checkEnvFromSecret } from './secrets';
import { instanceWorkloadName, MAX_INSTANCE_NAME } from './names';
import { logsUrlOf, ownedState, type NodeView, type OwnedState, type RecoveryPolicy } from './replica-state';

/** The public key types OpenSSH accepts for user authentication, without options. */
const KEY_LINE =
  /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp256|ecdsa-sha2-nistp384|ecdsa-sha2-nistp521|sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com) [A-Za-z0-9+/]+={0,3}( [^\r\n]*)?$/;
const MAX_KEYS = 32;
export const INSTANCE_POD_SET = 'instance';

export function normalizeInstanceSpec(spec: GPUInstanceSpec): GPUInstanceSpec {
  return { ...spec, localQueue: spec.localQueue || DEFAULT_LOCAL_QUEUE, sshPublicKeys: spec.sshPublicKeys.map((k) => k.trim()), env: spec.env ?? {}, envFromSecret: spec.envFromSecret ?? {}, labels: spec.labels ?? {} };
}

export function instanceResources(spec: GPUInstanceSpec, ctx: Pick<DeploymentValidationContext, 'resolveInstanceType'>): PodResources | undefined {
  return spec.instanceType ? ctx.resolveInstanceType(spec.instanceType)?.resources : spec.resources;
}

export function validateInstanceSpec(raw: GPUInstanceSpec, ctx: DeploymentValidationContext): ValidationProblem[] {
  const spec = normalizeInstanceSpec(raw);
  const problems: ValidationProblem[] = [];
  const add = (p: ValidationProblem | undefined): void => {
    if (p) problems.push(p);
  };
  add(checkDns1123Label('name', spec.name));
  if (spec.name.length > MAX_INSTANCE_NAME) add(problem('name', `at most ${MAX_INSTANCE_NAME} characters (its workload appends a suffix)`, `${spec.name.length} characters`));
  add(checkDns1123Label('namespace', spec.namespace));
  add(checkIntegerRange('priority', spec.priority, -(2 ** 31), 2 ** 31 - 1, 'int32'));
  let queuePool: string | undefined;
  const lq = checkDns1123Label('localQueue', spec.localQueue);
  if (lq) add(lq);
  else if (!checkDns1123Label('namespace', spec.namespace)) {
    // Resolved for the InstanceType's pool: the default LocalQueue admits into any pool.
    const resolved = ctx.resolveLocalQueue(spec.namespace, spec.localQueue, instancePool(spec, ctx));
    if (resolved.ok) queuePool = resolved.pool;
    else add(problem('localQueue', resolved.expected, shown(spec.localQueue)));
  }
  if (spec.instanceType && spec.resources) add(problem('instanceType', 'an InstanceType or resources, not both', 'both'));
  if (!spec.instanceType && !spec.resources) add(problem('instanceType', 'an InstanceType name (see `gpufleet get instancetypes`) or resources', 'neither'));
  if (spec.instanceType) {
    const it = ctx.resolveInstanceType(spec.instanceType);
    if (!it) add(problem('instanceType', 'an InstanceType of the cluster (see `gpufleet get instancetypes`)', shown(spec.instanceType)));
    else if (queuePool !== undefined && it.pool !== queuePool) {
      add(problem('instanceType', `an InstanceType of pool "${queuePool}", where LocalQueue "${spec.localQueue}" admits`, `${shown(spec.instanceType)} of pool "${it.pool}"`));
    }
  }
  if (spec.sshPublicKeys.length === 0) add(problem('sshPublicKeys', 'at least one OpenSSH public key (instances allow no password logins)', 'none'));
  if (spec.sshPublicKeys.length > MAX_KEYS) add(problem('sshPublicKeys', `at most ${MAX_KEYS} keys`, String(spec.sshPublicKeys.length)));
  spec.sshPublicKeys.forEach((key, i) => {
    if (!KEY_LINE.test(key)) add(problem(`sshPublicKeys[${i}]`, 'an OpenSSH public key line ("ssh-ed25519 AAAA… comment", no options)', shown(key.length > 40 ? `${key.slice(0, 40)}…` : key)));
  });
  for (const p of [...checkLabels('labels', spec.labels), ...checkEnv('env', spec.env), ...checkEnvFromSecret('', spec.env, spec.envFromSecret)]) add(p);
  for (const name of Object.keys(spec.env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) add(problem('env', 'environment variable names of letters, digits and "_"', shown(name)));
    else if (DEVICE_VISIBILITY_ENV.includes(name)) add(problem(`env.${name}`, 'not set: the runtime sets it to the allocated devices', shown(spec.env[name])));
  }
  if (spec.command.length > 4096 || spec.command.includes('\0')) add(problem('command', 'a command line of at most 4096 characters', `${spec.command.length} characters`));
  return problems;
}

/** The pool of the instance's InstanceType; undefined for explicit resources (the queue's pool). */
export function instancePool(spec: GPUInstanceSpec, ctx: Pick<DeploymentValidationContext, 'resolveInstanceType'>): string | undefined {
  return spec.instanceType ? ctx.resolveInstanceType(spec.instanceType)?.pool : undefined;
}

/** `pool`: the pool of its InstanceType ('' for explicit resources): the default LocalQueue routes by it. */
export function instanceWorkloadSpec(spec: GPUInstanceSpec, resources: PodResources, suffix: string, pool = ''): WorkloadSpec {
  return {
    name: instanceWorkloadName(spec.name, suffix),
    namespace: spec.namespace,
    localQueue: spec.localQueue,
    priority: spec.priority,
    podSets: [{ name: INSTANCE_POD_SET, count: 1, size: 1, resources, topology: undefined }],
    labels: { ...spec.labels, [OwnerLabels.instance]: spec.name },
    template: { engine: undefined, instance: { instance: spec.name, sshPublicKeys: spec.sshPublicKeys, env: spec.env, envFromSecret: spec.envFromSecret ?? {}, command: spec.command } },
    pool,
  };
}

export interface InstancePlanInput extends RecoveryPolicy {
  instance: GPUInstance;
  workloads: readonly Workload[];
  podsOf: (workload: string) => readonly PodRuntimeStatus[];
  nodeOf: (name: string) => NodeView | undefined;
}

export interface InstancePlan {
  create: boolean;
  delete: Array<{ workload: string; reason: string }>;
  status: GPUInstanceStatus;
  removeRecord: boolean;
}

export function planInstance(input: InstancePlanInput): InstancePlan {
  const { instance } = input;
  const spec = instance.spec!;
  const owned = input.workloads
    .map((w) => ({ w, name: w.spec?.name ?? '', state: ownedState(w, input.podsOf(w.spec?.name ?? ''), input.nodeOf, input) }))
    .sort((a, b) => (b.w.status?.submittedAt?.getTime() ?? 0) - (a.w.status?.submittedAt?.getTime() ?? 0));
  const plan: InstancePlan = { create: false, delete: [], status: undefined as unknown as GPUInstanceStatus, removeRecord: false };
  const deleting = instance.deletionRequestedAt !== undefined;
  if (deleting || spec.stop) {
    for (const o of owned) plan.delete.push({ workload: o.name, reason: deleting ? 'the instance is being deleted' : 'the instance is stopped' });
    plan.removeRecord = deleting && owned.length === 0;
    plan.status = {
      ...blankStatus(),
      phase: deleting ? InstancePhase.INSTANCE_PHASE_DELETING : InstancePhase.INSTANCE_PHASE_STOPPED,
      message: owned.length > 0 ? 'stopping sshd and releasing devices' : deleting ? '' : 'stopped; devices released (start it to get new ones)',
    };
    return plan;
  }
  let current: { w: Workload; name: string; state: OwnedState } | undefined;
  for (const o of owned) {
    if (o.state.kind === 'finished' || (o.state.kind === 'lost' && o.state.moveNow)) plan.delete.push({ workload: o.name, reason: o.state.message });
    else if (!current) current = o;
    else plan.delete.push({ workload: o.name, reason: `duplicate of ${current.name}` });
  }
  plan.create = current === undefined;
  plan.status = current ? statusOf(current.w, current.state) : { ...blankStatus(), phase: InstancePhase.INSTANCE_PHASE_PENDING, message: 'being created' };
  const moved = owned.find((o) => o.state.kind === 'lost' && o.state.moveNow);
  if (moved && plan.create) plan.status.message = `${moved.state.message}; a new instance (empty working directory) is being placed`;
  return plan;
}

function blankStatus(): GPUInstanceStatus {
  return { phase: InstancePhase.INSTANCE_PHASE_UNSPECIFIED, workload: '', node: '', sshHost: '', sshPort: 0, sshUser: '', sshHostKey: '', acceleratorIds: [], devicesEnv: {}, message: '', logsUrl: '' };
}

function statusOf(w: Workload, state: OwnedState): GPUInstanceStatus {
  const status: GPUInstanceStatus = { ...blankStatus(), workload: w.spec?.name ?? '', acceleratorIds: (w.status?.placements ?? []).flatMap((p) => p.acceleratorIds) };
  switch (state.kind) {
    case 'pending':
    case 'finished':
      return { ...status, phase: InstancePhase.INSTANCE_PHASE_PENDING, message: state.message };
    case 'lost':
      return { ...status, phase: InstancePhase.INSTANCE_PHASE_FAILED, node: state.node, message: state.message };
    case 'running': {
      const pod = state.pod0;
      const withPod: GPUInstanceStatus = {
        ...status,
        node: state.node,
        sshHost: pod?.host ?? '',
        sshPort: pod?.port ?? 0,
        sshUser: pod?.sshUser ?? '',
        sshHostKey: pod?.sshHostKey ?? '',
        devicesEnv: pod?.devicesEnv ?? {},
        logsUrl: logsUrlOf(pod),
        message: state.message,
      };
      const phase =
        state.state === 'Ready'
          ? InstancePhase.INSTANCE_PHASE_RUNNING
          : state.state === 'Failed'
            ? InstancePhase.INSTANCE_PHASE_FAILED
            : InstancePhase.INSTANCE_PHASE_STARTING;
      return { ...withPod, phase };
    }
  }
}
