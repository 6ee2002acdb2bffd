/**
 * Validation of a ModelDeploymentSpec. Every problem is reported at once, each naming its field
 * (`roles[1].instanceType: expected …, got …`), so one round trip fixes the request.
 */
import type { DeploymentRole, ModelDeploymentSpec, PodResources } from '@gpufleet/contracts';
import { buildEngineCommand, ENGINE_KINDS, ENGINE_MODES, EngineSpecError, MULTI_NODE_MODES } from '@gpufleet/engine-presets';
import { checkDns1123Label, checkIntegerRange, problem, shown, type ValidationProblem } from '@gpufleet/scheduling-core';
import { engineSpecOf } from './engine-run';
import { checkArgs, checkEnv, checkLabels, LIMITS } from './limits';
import { checkEnvFromSecret, layerEnv } from './secrets';
import { MAX_DEPLOYMENT_NAME, MAX_REPLICAS } from './names';
import { checkSizing } from './memory-sizing';

/** Pods per replica: a multi-node engine spans a handful of nodes, not a rack. */
export const MAX_REPLICA_SIZE = 16;
export const DEFAULT_LOCAL_QUEUE = 'default';

/** Where a LocalQueue leads: its pool, or a sentence saying why it leads nowhere. */
export type QueueResolution = { ok: true; pool: string } | { ok: false; expected: string };

export interface InstanceTypeResolution {
  pool: string;
  resources: PodResources;
  /** Memory of one accelerator, MiB (for engine presets that size by it). */
  acceleratorMemoryMib?: number;
}

export interface DeploymentValidationContext {
  /** `pool`: the pool of the InstanceType the pods come from, when they come from one (a managed LocalQueue routes by it). */
  resolveLocalQueue(namespace: string, localQueue: string, pool?: string): QueueResolution;
  /** undefined: no such InstanceType. */
  resolveInstanceType(name: string): InstanceTypeResolution | undefined;
  /** Whether a ModelArtifact `namespace/name` exists; left out: artifact names are only checked for form. */
  resolveArtifact?(namespace: string, name: string): boolean;
}

/** Fills what a user may leave out: queue, engine, mode, served name, role name and size. */
export function normalizeDeploymentSpec(spec: ModelDeploymentSpec): ModelDeploymentSpec {
  const engine = spec.engine ?? { engine: '', version: '', mode: '', customCommand: '', multiNode: '', extraArgs: [], env: {}, speculative: undefined, kvOffload: undefined, envFromSecret: {} };
  const single = spec.roles.length === 1;
  return {
    ...spec,
    localQueue: spec.localQueue || DEFAULT_LOCAL_QUEUE,
    artifact: spec.artifact ?? '',
    servedModelName: spec.servedModelName || defaultServedName(spec.model || (spec.artifact ?? '')),
    engine: { ...engine, engine: engine.engine || 'vllm', mode: engine.mode || 'throughput', extraArgs: engine.extraArgs ?? [], env: engine.env ?? {}, envFromSecret: engine.envFromSecret ?? {} },
    roles: spec.roles.map((r) => ({ ...r, role: r.role || (single ? 'server' : ''), size: r.size || 1, extraArgs: r.extraArgs ?? [], env: r.env ?? {}, envFromSecret: r.envFromSecret ?? {} })),
    labels: spec.labels ?? {},
  };
}

/** "/models/Llama-3.1-8B/" → "Llama-3.1-8B"; "meta-llama/Llama-3.1-8B" → "Llama-3.1-8B". */
export function defaultServedName(model: string): string {
  const parts = model.split('/').filter((p) => p !== '');
  return parts[parts.length - 1] ?? model;
}

/** The resources of each pod of a role: from its InstanceType, else as written. */
/** The pool of the role's InstanceType; undefined for explicit resources (the queue's pool). */
export function rolePool(role: DeploymentRole, ctx: Pick<DeploymentValidationContext, 'resolveInstanceType'>): string | undefined {
  return role.instanceType ? ctx.resolveInstanceType(role.instanceType)?.pool : undefined;
}

export function roleResources(role: DeploymentRole, ctx: Pick<DeploymentValidationContext, 'resolveInstanceType'>): PodResources | undefined {
  if (role.instanceType) return ctx.resolveInstanceType(role.instanceType)?.resources;
  return role.resources;
}

/** Accelerators one pod of the role is given (whole count, else 1 for a share, slice or partition). */
export function acceleratorsPerPod(resources: PodResources | undefined): number {
  const a = resources?.accelerator;
  if (!a) return 0;
  if (a.whole !== undefined) return a.whole;
  return 1;
}

export function validateDeploymentSpec(raw: ModelDeploymentSpec, ctx: DeploymentValidationContext): ValidationProblem[] {
  const spec = normalizeDeploymentSpec(raw);
  const problems: ValidationProblem[] = [];
  const add = (p: ValidationProblem | undefined): void => {
    if (p) problems.push(p);
  };
  add(checkDns1123Label('name', spec.name));
  if (spec.name.length > MAX_DEPLOYMENT_NAME) add(problem('name', `at most ${MAX_DEPLOYMENT_NAME} characters (replica workloads append their role, ordinal and a suffix)`, `${spec.name.length} characters`));
  add(checkDns1123Label('namespace', spec.namespace));
  add(checkIntegerRange('priority', spec.priority, -(2 ** 31), 2 ** 31 - 1, 'int32'));
  for (const p of [...checkLabels('labels', spec.labels), ...checkEnv('engine.env', spec.engine?.env ?? {}), ...checkEnvFromSecret('engine', spec.engine?.env ?? {}, spec.engine?.envFromSecret ?? {}), ...checkArgs('engine.extraArgs', spec.engine?.extraArgs ?? [])]) add(p);
  let queuePool: string | undefined;
  const lq = checkDns1123Label('localQueue', spec.localQueue);
  if (lq) add(lq);
  else if (!checkDns1123Label('namespace', spec.namespace)) {
    const resolved = ctx.resolveLocalQueue(spec.namespace, spec.localQueue);
    if (resolved.ok) queuePool = resolved.pool;
    else add(problem('localQueue', resolved.expected, shown(spec.localQueue)));
  }
  if (spec.artifact) {
    // The name of a ModelArtifact of the same namespace (the node runtime reads its copy).
    add(checkDns1123Label('artifact', spec.artifact));
    if (ctx.resolveArtifact && !checkDns1123Label('artifact', spec.artifact) && !checkDns1123Label('namespace', spec.namespace) && !ctx.resolveArtifact(spec.namespace, spec.artifact)) {
      add(problem('artifact', `a ModelArtifact of namespace "${spec.namespace}" (see \`gpufleet get artifacts -n ${spec.namespace}\`)`, shown(spec.artifact)));
    }
  }
  // With an artifact the engine is given the cache's path, so the model may be left empty.
  const modelOptional = spec.artifact !== '' && spec.model === '';
  if (!modelOptional && (!spec.model.trim() || /\s/.test(spec.model) || spec.model.length > 1024)) {
    add(problem('model', 'a model path or artifact reference without spaces (at most 1024 characters), or an artifact', spec.model === '' ? 'an empty string' : shown(spec.model)));
  }
  if (!spec.servedModelName || /\s/.test(spec.servedModelName) || spec.servedModelName.length > 256) {
    add(problem('servedModelName', 'a name without spaces (at most 256 characters)', shown(spec.servedModelName)));
  }
  const engine = spec.engine!;
  if (!(ENGINE_KINDS as readonly string[]).includes(engine.engine)) add(problem('engine.engine', ENGINE_KINDS.join(' | '), shown(engine.engine)));
  if (!(ENGINE_MODES as readonly string[]).includes(engine.mode)) add(problem('engine.mode', ENGINE_MODES.join(' | '), shown(engine.mode)));
  if (engine.multiNode && !(MULTI_NODE_MODES as readonly string[]).includes(engine.multiNode)) {
    add(problem('engine.multiNode', `${MULTI_NODE_MODES.join(' | ')} (or empty for the engine's default)`, shown(engine.multiNode)));
  }

  for (const p of checkSizing(spec)) add(p);
  validateRoles(spec, ctx, queuePool, add);
  return problems;
}

function validateRoles(
  spec: ModelDeploymentSpec,
  ctx: DeploymentValidationContext,
  queuePool: string | undefined,
  add: (p: ValidationProblem | undefined) => void,
): void {
  const names = spec.roles.map((r) => r.role);
  const shapeOk =
    (names.length === 1 && names[0] === 'server') || (names.length === 2 && names.includes('prefill') && names.includes('decode'));
  if (!shapeOk) {
    add(problem('roles', 'one "server" role, or a "prefill" and a "decode" role', names.length === 0 ? 'no roles' : names.map((n) => shown(n)).join(', ')));
  }
  spec.roles.forEach((role, i) => {
    const at = `roles[${i}]`;
    add(checkIntegerRange(`${at}.replicas`, role.replicas, 0, MAX_REPLICAS));
    add(checkIntegerRange(`${at}.size`, role.size, 1, MAX_REPLICA_SIZE, 'pods per replica'));
    const hasResources = role.resources !== undefined;
    if (role.instanceType && hasResources) add(problem(`${at}.instanceType`, 'an InstanceType or resources, not both', 'both'));
    if (!role.instanceType && !hasResources) add(problem(`${at}.instanceType`, 'an InstanceType name (see `gpufleet get instancetypes`) or resources', 'neither'));
    let memoryMib: number | undefined;
    if (role.instanceType) {
      const it = ctx.resolveInstanceType(role.instanceType);
      if (!it) add(problem(`${at}.instanceType`, 'an InstanceType of the cluster (see `gpufleet get instancetypes`)', shown(role.instanceType)));
      else {
        memoryMib = it.acceleratorMemoryMib;
        // Where the queue admits this role's pods: the default LocalQueue routes by pool.
        const routed = queuePool === undefined ? undefined : ctx.resolveLocalQueue(spec.namespace, spec.localQueue, it.pool);
        if (routed && !routed.ok) add(problem(`${at}.instanceType`, routed.expected, `${shown(role.instanceType)} of pool "${it.pool}"`));
        else if (routed && it.pool !== routed.pool) {
          add(problem(`${at}.instanceType`, `an InstanceType of pool "${routed.pool}", where LocalQueue "${spec.localQueue}" admits`, `${shown(role.instanceType)} of pool "${it.pool}"`));
        }
      }
    }
    const resources = roleResources(role, ctx);
    if (resources && !resources.accelerator) add(problem(`${at}.resources.accelerator`, 'an accelerator request (engines need at least one accelerator)', 'none'));
    for (const p of [...checkEnv(`${at}.env`, role.env ?? {}), ...checkEnvFromSecret(at, role.env ?? {}, role.envFromSecret ?? {}), ...checkArgs(`${at}.extraArgs`, role.extraArgs ?? [])]) add(p);
    for (const [name] of Object.entries(role.env ?? {})) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) add(problem(`${at}.env`, 'environment variable names of letters, digits and "_"', shown(name)));
    }
    // The engine's own refusals (flags it does not take, speculative decoding on a prefill
    // role, …) are found now rather than when a node runtime first starts a replica.
    const n = acceleratorsPerPod(resources);
    if (n < 1) return;
    // The check below lays out one accelerator id per accelerator: 4 294 967 295 of them ran
    // the scheduler out of memory.
    if (n > LIMITS.acceleratorsPerPod) {
      add(problem(`${at}.resources.accelerator.whole`, `at most ${LIMITS.acceleratorsPerPod} accelerators per pod`, String(n)));
      return;
    }
    // A multi-node replica is checked as its leader and as a worker would run: placeholder
    // addresses and ports stand in for what the runtimes resolve when the pods start. The
    // leader lists one address per pod, so a size out of range (already reported above) is not
    // laid out: 4 294 967 295 addresses ran the scheduler out of memory.
    const size = role.size || 1;
    if (!Number.isInteger(size) || size > MAX_REPLICA_SIZE) return;
    const ranks = size > 1 ? [0, 1] : [undefined];
    const seen = new Set<string>();
    for (const rank of ranks) {
      const group =
        rank === undefined
          ? undefined
          : { size, rank, leaderAddress: '10.0.0.1', podAddress: `10.0.0.${rank + 1}`, rendezvousPort: 8001, nvlinkAcrossPods: ['node', 'nvlink-domain'].includes(role.topology?.requiredLevel ?? ''), peerAddresses: Array.from({ length: size }, (_, k) => `10.0.0.${k + 1}`) };
      try {
        buildEngineCommand(
          engineSpecOf(
            { role: role.role, model: spec.model || '/var/lib/gpufleet/artifact', servedModelName: spec.servedModelName, engine: { ...spec.engine!, extraArgs: [...spec.engine!.extraArgs, ...role.extraArgs], ...layerEnv(spec.engine!, role) } },
            { acceleratorIds: Array.from({ length: n }, (_, k) => String(k)), port: 8000, ...(memoryMib ? { acceleratorMemoryMib: memoryMib } : {}), ...(group ? { group } : {}) },
          ),
        );
      } catch (err) {
        if (!(err instanceof EngineSpecError)) throw err;
        for (const p of err.problems) {
          if (p.field === 'engine' || p.field === 'mode' || (p.field === 'group.mode' && !(MULTI_NODE_MODES as readonly string[]).includes(spec.engine!.multiNode))) continue; // reported above
          const field = engineField(p.field, at);
          if (seen.has(`${field}:${p.message}`)) continue;
          seen.add(`${field}:${p.message}`);
          add(problem(field, p.message, `role ${role.role}`));
        }
      }
    }
  });
}

/** The engine-presets field of a problem, as the deployment spec names it. */
function engineField(field: string, role: string): string {
  if (field === 'modelPath') return 'model';
  if (field === 'servedModelName') return 'servedModelName';
  if (field === 'role') return `${role}.role`;
  if (field.startsWith('extraArgs') || field.startsWith('env')) return `engine.${field} (with ${role})`;
  if (field === 'customTemplate') return 'engine.customCommand';
  if (field === 'group.mode') return 'engine.multiNode';
  if (field === 'group') return `${role}.size`;
  if (field === 'acceleratorsPerPod' || field.startsWith('acceleratorIds')) return `${role}.resources`;
  return `engine.${field}`;
}
