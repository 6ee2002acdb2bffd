import { createHash } from 'crypto';
import type { EngineRun, InstanceRun, NodeInventory } from '@gpufleet/contracts';
import { engineSpecOf } from '@gpufleet/deployments-core/engine-run';
import {
  buildEngineCommand,
  EngineSpecError,
  simulatedEngineCommand,
  type EngineCommand,
  type EngineSimEntry,
  type EngineSpec,
} from '@gpufleet/engine-presets';
import { DEVICE_VISIBILITY_VARS, specHash, type BackoffPolicy, type ProcessSandbox, type ProcessSpec, type ResourceLimits, type SandboxBind } from '@gpufleet/process-spec';
import type { DesiredPod } from './desired-pods';
import type { EngineMode } from './engine-mode';
import { PodPlanError, type PodPlanErrorReason } from './errors';
import { engineProcessId, instanceCommandProcessId, instanceName, instancesDir, instanceWorkDir, podDir, podLogFile, podWorkDir, sshdLogFile } from './layout';
import { podIdentity, podLimits, podSandbox, type PodIdentity, type PodSandboxContext } from './pod-sandbox';
import { resolvePodDevices, type PodDevices } from './pod-devices';
import { resolveSecretEnv, type SecretLookup } from './secret-env';
import type { GroupResolution } from './pod-group';
import { resolvePodWeights, withPodWeights, type WeightsLookup } from './weights';
import type { EngineGroup } from '@gpufleet/engine-presets';

/** How this runtime runs pods; the same for every pod of the node. */
export interface PlanContext {
  readonly inventory: NodeInventory;
  readonly stateDir: string;
  readonly engineMode: EngineMode;
  /** How to start engine-sim, and the directory it must start in (where `node -r` finds its preloads). */
  readonly engineSim: EngineSimEntry & { readonly cwd: string };
  /** SIGTERM → SIGKILL, ms. */
  readonly stopGraceMs: number;
  readonly backoff?: BackoffPolicy;
  /** Between health probes, ms (default 1000). */
  readonly healthIntervalMs?: number;
  /** Where instances' sshd listens (default 127.0.0.1). */
  readonly instanceListenAddress?: string;
  /** Where engines listen (default every address, DEFAULT_ENGINE_HOST); 127.0.0.1 keeps them on the machine. */
  readonly engineListenAddress?: string;
  /** Where env_from_secret references are resolved; without it a pod that has any fails SECRET_NOT_FOUND. */
  readonly secrets?: SecretLookup;
  /** Sandbox every pod (bwrap, a uid of its own); absent: pods run as the runtime's user, unconfined. */
  readonly sandbox?: PodSandboxContext;
  /** This node's copies of ModelArtifacts; without it an engine naming an artifact waits (WEIGHTS_PENDING). */
  readonly weights?: WeightsLookup;
}

interface PodPlanBase {
  readonly key: string;
  readonly pod: DesiredPod;
  /** The engine's HTTP port or the instance's SSH port: the same for the life of the pod. */
  readonly port: number;
  /** EngineRun.template_hash; empty for instances. */
  readonly templateHash: string;
  readonly devicesEnv: Readonly<Record<string, string>>;
  /** A pod of a multi-node replica: its role, and (the leader) the port the others rendezvous at. */
  readonly group?: { readonly role: 'leader' | 'worker'; readonly port: number };
}

interface SandboxedPlan {
  /** Who the pod runs as when sandboxed: the app writes its passwd and group files (`identityBinds`). */
  readonly identity: PodIdentity | undefined;
}

export interface EnginePodPlan extends PodPlanBase, SandboxedPlan {
  readonly kind: 'engine';
  readonly engineMode: EngineMode;
  readonly process: ProcessSpec;
  /** Digest of everything the pod is launched with; a pod whose launch changed is replaced. */
  readonly launch: string;
}

/** What `SshdInstance` needs; the app turns it into the sshd's ProcessSpec (`SshdInstance.prepare`). */
export interface InstanceSshd {
  /** SshdInstance id: the instance lives in `<baseDir>/<name>`. */
  readonly name: string;
  readonly baseDir: string;
  readonly workDir: string;
  readonly authorizedKeys: readonly string[];
  /** The login environment: the devices, then InstanceRun.env. */
  readonly env: Readonly<Record<string, string>>;
  readonly logFile: string;
  readonly listenAddress: string;
  /** SshdInstance's sandbox: sshd runs as the pod's user, who is the only login. */
  readonly sandbox?: Omit<ProcessSandbox, 'writable'> & { readonly user: string };
  /** cgroup limits of sshd and so of every session. */
  readonly limits?: ResourceLimits;
}

export interface InstancePodPlan extends PodPlanBase, SandboxedPlan {
  readonly kind: 'instance';
  readonly instance: string;
  readonly sshd: InstanceSshd;
  /** InstanceRun.command, run next to sshd with the login environment. */
  readonly command: ProcessSpec | undefined;
  readonly launch: string;
}

/** A pod that cannot be started as placed; reported `Failed` with `message`. */
export interface FailedPodPlan extends PodPlanBase {
  readonly kind: 'failed';
  readonly message: string;
  /** Why, when the planner knows (a PodPlanError's reason). */
  readonly reason?: PodPlanErrorReason;
}

export type RunnablePodPlan = EnginePodPlan | InstancePodPlan;
export type PodPlan = RunnablePodPlan | FailedPodPlan;

/**
 * How to run one desired pod on `port`: its devices, and the processes of its template. Never
 * throws for the pod's own problems (an unknown accelerator, a refused engine spec): those
 * make a `failed` plan whose message says what to fix.
 */
export function planPod(pod: DesiredPod, port: number, ctx: PlanContext, group: GroupResolution = { kind: 'single' }): PodPlan {
  const templateHash = pod.template.engine?.templateHash ?? '';
  let devices: PodDevices | undefined;
  // A leader publishes its rendezvous port even while it waits for its workers' addresses: they start (and so say where they are) only once it has.
  const leaderPort = group.kind === 'group' ? group.group.rendezvousPort : group.kind === 'waiting' ? (group.rendezvousPort ?? 0) : 0;
  const groupInfo = group.kind === 'single' ? undefined : ({ role: pod.placement.pod === 0 ? 'leader' : 'worker', port: pod.placement.pod === 0 ? leaderPort : 0 } as const);
  try {
    devices = resolvePodDevices(pod.placement, ctx.inventory);
    if (pod.template.engine && group.kind === 'waiting') throw new PodPlanError(group.reason ?? 'GROUP_LEADER_PENDING', group.message);
    if (pod.template.engine) return planEngine(pod, pod.template.engine, devices, port, ctx, group.kind === 'group' ? group.group : undefined);
    if (pod.template.instance) return planInstance(pod, pod.template.instance, devices, port, ctx);
    throw new PodPlanError('UNSUPPORTED_TEMPLATE', 'the pod template has neither an engine nor an instance');
  } catch (err) {
    const message = err instanceof PodPlanError || err instanceof EngineSpecError ? err.message : `INTERNAL: ${(err as Error).message ?? String(err)}`;
    const reason: PodPlanErrorReason | undefined = err instanceof PodPlanError ? err.reason : err instanceof EngineSpecError ? 'INVALID_ENGINE_SPEC' : undefined;
    return { kind: 'failed', key: pod.key, pod, port, templateHash, devicesEnv: devices?.env ?? {}, message, ...(reason ? { reason } : {}), ...(groupInfo ? { group: groupInfo } : {}) };
  }
}

function planEngine(pod: DesiredPod, named: EngineRun, devices: PodDevices, port: number, ctx: PlanContext, group: EngineGroup | undefined): EnginePodPlan {
  // An artifact's weights are the node cache's verified copy: the engine loads it from there.
  const weights = named.artifact ? resolvePodWeights(pod.ref.namespace, named.artifact, ctx.weights) : undefined;
  const run = weights ? withPodWeights(named, weights) : named;
  const spec = { ...engineSpec(run, devices, port, ctx.engineListenAddress), ...(group ? { group } : {}) };
  // A worker serves no API: it is Ready while alive (its leader serves only once the whole group is up).
  const worker = group !== undefined && group.rank > 0;
  const simulated = ctx.engineMode === 'simulated';
  const command: EngineCommand = simulated ? simulatedEngineCommand(spec, ctx.engineSim) : buildEngineCommand(spec);
  // Values of Secrets join the environment here and live only in the process's spec: never in
  // the plan's status fields, the pod record or a log line.
  const fromSecrets = resolveSecretEnv(pod.ref.namespace, run.engine?.envFromSecret ?? {}, ctx.secrets);
  const env: Record<string, string> = { ...withoutVisibility(command.env), ...withoutVisibility(fromSecrets), ...(weights?.env ?? {}) };
  Object.assign(env, devices.env, { GPUFLEET_POD: pod.id });
  if (run.templateHash) env.GPUFLEET_TEMPLATE_HASH = run.templateHash;
  // engine-sim names itself after the host by default; several on one node need names of their own.
  if (simulated) env.REPLICA_NAME = replicaName(pod);
  // Sandboxed, the engine writes only its work directory (its HOME, and its cwd unless
  // simulated: engine-sim starts where its preloads are); its pod directory holds the runtime's logs.
  const work = podWorkDir(ctx.stateDir, pod.ref);
  const identity = ctx.sandbox ? podIdentity(ctx.sandbox, port, work) : undefined;
  if (identity) env.HOME = work;
  const process: ProcessSpec = {
    id: engineProcessId(pod.ref),
    command: command.command,
    args: command.args,
    env,
    cwd: simulated ? ctx.engineSim.cwd : identity ? work : podDir(ctx.stateDir, pod.ref),
    logFile: podLogFile(ctx.stateDir, pod.ref),
    ...(worker ? {} : { health: { probe: { kind: 'http' as const, url: `http://127.0.0.1:${port}/health` }, intervalMs: ctx.healthIntervalMs ?? 1_000 } }),
    restart: 'always',
    stopGraceMs: ctx.stopGraceMs,
    ...(ctx.backoff ? { backoff: ctx.backoff } : {}),
    ...(ctx.sandbox && identity ? { sandbox: withReadOnly(podSandbox(ctx.sandbox, identity, devices, podDir(ctx.stateDir, pod.ref), [work]), weights?.binds ?? []) } : {}),
    ...limitsOf(pod, ctx),
  };
  return {
    kind: 'engine',
    identity,
    key: pod.key,
    pod,
    port,
    templateHash: run.templateHash,
    devicesEnv: devices.env,
    engineMode: ctx.engineMode,
    ...(group ? { group: { role: group.rank === 0 ? ('leader' as const) : ('worker' as const), port: group.rank === 0 ? group.rendezvousPort : 0 } } : {}),
    process,
    launch: digest({ engine: specHash(process) }),
  };
}

/** EngineRun on this pod's devices → EngineSpec (the one conversion, shared with deployment validation). */
export function engineSpec(run: EngineRun, devices: PodDevices, port: number, host?: string): EngineSpec {
  return engineSpecOf(run, {
    acceleratorIds: devices.engineIds,
    port,
    ...(host ? { host } : {}),
    ...(devices.acceleratorMemoryMib ? { acceleratorMemoryMib: devices.acceleratorMemoryMib } : {}),
  });
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function planInstance(pod: DesiredPod, run: InstanceRun, devices: PodDevices, port: number, ctx: PlanContext): InstancePodPlan {
  if (run.sshPublicKeys.length === 0) throw new PodPlanError('INVALID_INSTANCE', `instance ${run.instance || pod.ref.workload} has no SSH public key; logins are by key only`);
  for (const name of Object.keys(run.env)) {
    if (!ENV_NAME.test(name)) throw new PodPlanError('INVALID_INSTANCE', `env.${name}: not a valid environment variable name`);
    if (DEVICE_VISIBILITY_VARS.includes(name)) {
      throw new PodPlanError('INVALID_INSTANCE', `env.${name}: set by the node runtime from the allocated devices; remove it from the instance`);
    }
  }
  for (const name of Object.keys(run.envFromSecret ?? {})) {
    if (!ENV_NAME.test(name) || DEVICE_VISIBILITY_VARS.includes(name) || name in run.env) {
      throw new PodPlanError('INVALID_INSTANCE', `envFromSecret.${name}: not a variable the instance may take from a secret (a valid name, not a device variable, not also in env)`);
    }
  }
  const fromSecrets = resolveSecretEnv(pod.ref.namespace, run.envFromSecret ?? {}, ctx.secrets);
  const env = { ...devices.env, ...run.env, ...fromSecrets, GPUFLEET_POD: pod.id };
  const workDir = instanceWorkDir(ctx.stateDir, pod.ref);
  const identity = ctx.sandbox ? podIdentity(ctx.sandbox, port, workDir) : undefined;
  // sshd and the command get the same confinement, each in a sandbox of its own: sessions share
  // the command's files, devices and uid, not its PID namespace.
  const sandbox = ctx.sandbox && identity ? podSandbox(ctx.sandbox, identity, devices, podDir(ctx.stateDir, pod.ref), [workDir]) : undefined;
  const sshd: InstanceSshd = {
    name: instanceName(pod.ref),
    baseDir: instancesDir(ctx.stateDir),
    workDir,
    authorizedKeys: run.sshPublicKeys.map((k) => k.trim()),
    env,
    logFile: sshdLogFile(ctx.stateDir, pod.ref),
    listenAddress: ctx.instanceListenAddress ?? '127.0.0.1',
    ...(sandbox && identity ? { sandbox: { uid: sandbox.uid, gid: sandbox.gid, hidden: sandbox.hidden, devices: sandbox.devices, readOnly: sandbox.readOnly ?? [], user: identity.name } } : {}),
    // sshd's cgroup holds the sessions; the command has a cgroup of its own with the same limits.
    ...limitsOf(pod, ctx),
  };
  const command: ProcessSpec | undefined = run.command.trim()
    ? {
        id: instanceCommandProcessId(pod.ref),
        command: '/bin/sh',
        args: ['-c', run.command],
        env: identity ? { ...env, HOME: workDir } : env,
        cwd: workDir,
        logFile: podLogFile(ctx.stateDir, pod.ref),
        restart: 'always',
        stopGraceMs: ctx.stopGraceMs,
        ...(ctx.backoff ? { backoff: ctx.backoff } : {}),
        ...(sandbox ? { sandbox } : {}),
        ...limitsOf(pod, ctx),
      }
    : undefined;
  return {
    kind: 'instance',
    identity,
    key: pod.key,
    pod,
    port,
    templateHash: '',
    devicesEnv: devices.env,
    instance: run.instance || pod.ref.workload,
    sshd,
    command,
    // New keys or environment replace the pod too: sshd restarts on rewritten files, in the same
    // directory, with the same host key.
    launch: digest({ port, sshd, command: command ? specHash(command) : null }),
  };
}

function withReadOnly(sandbox: ProcessSandbox, binds: readonly SandboxBind[]): ProcessSandbox {
  return binds.length === 0 ? sandbox : { ...sandbox, readOnly: [...(sandbox.readOnly ?? []), ...binds] };
}

function limitsOf(pod: DesiredPod, ctx: PlanContext): { limits?: ResourceLimits } {
  const limits = ctx.sandbox ? podLimits(ctx.sandbox, pod.placement) : undefined;
  return limits ? { limits } : {};
}

function withoutVisibility(env: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !DEVICE_VISIBILITY_VARS.includes(name)));
}

/** engine-sim's REPLICA_NAME: a NATS subject token (A-Z a-z 0-9 _ -), at most 128 characters. */
function replicaName(pod: DesiredPod): string {
  const { namespace, workload, podSet, replica } = pod.ref;
  return `${namespace}-${workload}-${podSet}-${replica}-${pod.ref.pod}`.replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 128);
}

/** A digest that does not depend on the order of object keys (proto maps arrive in any order). */
function digest(value: unknown): string {
  return `sha256:${createHash('sha256').update(JSON.stringify(value, sortedKeys)).digest('hex')}`;
}

function sortedKeys(_key: string, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
