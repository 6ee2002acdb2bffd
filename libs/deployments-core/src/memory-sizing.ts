/**
 * GPU memory sizing of a deployment whose artifact has a model description: the per-GPU need of
 * each role on its InstanceType (libs/model-estimate, vLLM's formula), a refusal with the numbers
 * when it cannot fit, and the tensor-parallel size (the `<pool>.<N>x` InstanceType) when
 * `sizing.autoTensorParallel` asks for it. Decisions as data: the API refuses, the controller
 * holds replicas back, both from the same function.
 */
import { ArtifactPhase, type DeploymentRole, type ModelArtifact, type ModelDeploymentSpec, type ModelSizing, type RoleMemoryEstimate } from '@gpufleet/contracts';
import { presetFor, type EngineMode, type PresetEngine } from '@gpufleet/engine-presets';
import { chooseTensorParallelSize, estimateMemory, GiB, modelDescriptionOf, ModelEstimateError, type EstimateOptions, type MemoryEstimate, type ModelDescription } from '@gpufleet/model-estimate';
import { problem, shown, type ValidationProblem } from '@gpufleet/scheduling-core';
import { acceleratorsPerPod, type DeploymentValidationContext } from './deployment-spec';

const MiB = 1024 * 1024;
/** KV cache dtypes vLLM takes for `--kv-cache-dtype` (and SGLang the first three). */
export const KV_CACHE_DTYPES = ['auto', 'fp8', 'fp8_e4m3', 'fp8_e5m2'] as const;
/** Longer than any model's context (Llama-4 Scout: 10M tokens); a bound, not a promise. */
export const MAX_SIZING_CONTEXT_LENGTH = 16 * 1024 * 1024;
export const MAX_SIZING_CONCURRENCY = 65536;

/** What the artifact says about the model: described, not yet (being resolved or read), or nothing to size by. */
export type ArtifactModelState =
  | { kind: 'described'; artifact: string; model: ModelDescription }
  | { kind: 'pending'; artifact: string; message: string }
  | { kind: 'none'; artifact: string; message: string };

export function artifactModelState(name: string, artifact: ModelArtifact | undefined): ArtifactModelState {
  const status = artifact?.status;
  if (!status) return { kind: 'pending', artifact: name, message: `artifact ${name} is not resolved yet` };
  const model = status.modelDigest && status.modelDigest === status.manifestDigest ? modelDescriptionOf(status.model) : undefined;
  if (model) return { kind: 'described', artifact: name, model };
  if (status.modelDigest && status.estimateError) return { kind: 'none', artifact: name, message: `artifact ${name} has no model description (${status.estimateError})` };
  if (status.phase === ArtifactPhase.ARTIFACT_PHASE_FAILED) return { kind: 'none', artifact: name, message: `artifact ${name} failed to resolve (${status.reason})` };
  return { kind: 'pending', artifact: name, message: `artifact ${name} is ${status.manifestDigest ? 'being described (config.json and weight headers)' : 'being resolved'}` };
}

/** An InstanceType of a pool's family: `<pool>.<N>x`. */
export interface FamilyMember {
  name: string;
  accelerators: number;
  acceleratorMemoryMib?: number;
}

export interface SizingContext extends Pick<DeploymentValidationContext, 'resolveInstanceType'> {
  /** The GPU InstanceTypes of a pool (for auto tensor parallel). */
  instanceTypesOfPool(pool: string): readonly FamilyMember[];
}

export interface RoleSizing {
  role: string;
  /** The role's index in spec.roles. */
  index: number;
  /** The InstanceType the role's replicas get: the spec's, or the one auto tensor parallel chose. */
  instanceType: string;
  fits: boolean;
  /** INSUFFICIENT_GPU_MEMORY: … with the numbers, when it does not fit. */
  message: string;
  estimate?: RoleMemoryEstimate;
}

/** Form checks of `sizing` that need no model. */
export function checkSizing(spec: ModelDeploymentSpec): ValidationProblem[] {
  const s = spec.sizing;
  if (!s) return [];
  const problems: ValidationProblem[] = [];
  if (s.contextLength > MAX_SIZING_CONTEXT_LENGTH) problems.push(problem('sizing.contextLength', `at most ${MAX_SIZING_CONTEXT_LENGTH} tokens (0: the model's own)`, String(s.contextLength)));
  if (s.concurrency > MAX_SIZING_CONCURRENCY) problems.push(problem('sizing.concurrency', `at most ${MAX_SIZING_CONCURRENCY} sequences (0: 1)`, String(s.concurrency)));
  if (!(Number.isFinite(s.gpuMemoryUtilization) && s.gpuMemoryUtilization >= 0 && s.gpuMemoryUtilization <= 1)) {
    problems.push(problem('sizing.gpuMemoryUtilization', "a fraction in (0, 1] (0: the engine preset's)", String(s.gpuMemoryUtilization)));
  }
  if (s.kvCacheDtype && !(KV_CACHE_DTYPES as readonly string[]).includes(s.kvCacheDtype)) problems.push(problem('sizing.kvCacheDtype', `${KV_CACHE_DTYPES.join(' | ')} (empty: auto)`, shown(s.kvCacheDtype)));
  if (s.autoTensorParallel) {
    spec.roles.forEach((role, i) => {
      if (!role.instanceType) problems.push(problem(`roles[${i}].instanceType`, 'an InstanceType naming the GPU family (sizing.autoTensorParallel picks its <pool>.<N>x sibling)', 'resources'));
      else if ((role.size || 1) > 1) problems.push(problem(`roles[${i}].size`, '1 pod per replica with sizing.autoTensorParallel (tensor parallel is chosen within one node)', String(role.size)));
    });
  }
  if (s.autoTensorParallel && !spec.artifact) problems.push(problem('sizing.autoTensorParallel', 'an artifact to size by (set artifact)', 'no artifact'));
  return problems;
}

/**
 * Engine flags the sizing adds (vLLM and SGLang); the user's own extraArgs come after and win.
 * The memory share is not among them: the preset sets that flag itself, so it travels as
 * EngineRun.gpuMemoryUtilization and replaces the preset's value (engineSpecOf).
 */
export function sizingArgs(engine: string, sizing: ModelSizing | undefined): string[] {
  if (!sizing) return [];
  const args: string[] = [];
  const kvCacheDtype = sizing.kvCacheDtype && sizing.kvCacheDtype !== 'auto' ? ['--kv-cache-dtype', sizing.kvCacheDtype] : [];
  if (engine === 'vllm') {
    if (sizing.contextLength) args.push('--max-model-len', String(sizing.contextLength));
    args.push(...kvCacheDtype);
  } else if (engine === 'sglang') {
    if (sizing.contextLength) args.push('--context-length', String(sizing.contextLength));
    args.push(...kvCacheDtype);
  }
  return args;
}

/** The estimate's options: the spec's sizing over the engine preset's concurrency, chunk and memory share. */
function estimateOptions(spec: ModelDeploymentSpec, acceleratorMemoryMib: number): Omit<EstimateOptions, 'tensorParallelSize'> {
  const s = spec.sizing;
  const engine = spec.engine?.engine || 'vllm';
  const preset = engine === 'custom' ? undefined : presetFor(engine as PresetEngine, (spec.engine?.mode || 'throughput') as EngineMode, acceleratorMemoryMib);
  return {
    ...(s?.contextLength ? { contextLength: s.contextLength } : {}),
    ...(s?.concurrency ? { concurrency: s.concurrency } : {}),
    ...(s?.kvCacheDtype ? { kvCacheDtype: s.kvCacheDtype } : {}),
    gpuMemoryUtilization: s?.gpuMemoryUtilization || preset?.memoryFraction || undefined,
    ...(preset ? { maxNumSeqs: preset.maxConcurrency } : {}),
    ...(preset?.prefillChunkTokens ? { maxNumBatchedTokens: preset.prefillChunkTokens } : {}),
  };
}

/**
 * Sizes every role of `spec` that names an InstanceType with known accelerator memory.
 * `problems` are refusals of the spec's fields (a context longer than the model's); `roles` the
 * estimates, those that do not fit with `fits` false and the numbers in `message`.
 */
export function sizeDeployment(spec: ModelDeploymentSpec, model: ModelDescription, ctx: SizingContext): { roles: RoleSizing[]; problems: ValidationProblem[] } {
  const roles: RoleSizing[] = [];
  const problems: ValidationProblem[] = [];
  const maxContext = model.shape.maxContextLength;
  if (spec.sizing?.contextLength && maxContext && spec.sizing.contextLength > maxContext) {
    problems.push(problem('sizing.contextLength', `at most the model's ${maxContext} tokens (max_position_embeddings of artifact ${spec.artifact})`, String(spec.sizing.contextLength)));
    return { roles, problems };
  }
  spec.roles.forEach((role, i) => {
    const sized = sizeRole(spec, role, model, ctx);
    if (!sized) return;
    if ('invalid' in sized) {
      problems.push(problem('sizing', sized.invalid, `role ${role.role}`));
      return;
    }
    roles.push({ ...sized, index: i });
  });
  return { roles, problems };
}

function sizeRole(spec: ModelDeploymentSpec, role: DeploymentRole, model: ModelDescription, ctx: SizingContext): Omit<RoleSizing, 'index'> | { invalid: string } | undefined {
  if (!role.instanceType) return undefined; // explicit resources say nothing of GPU memory
  const it = ctx.resolveInstanceType(role.instanceType);
  const memoryMib = it?.acceleratorMemoryMib;
  const perPod = acceleratorsPerPod(it?.resources);
  if (!it || !memoryMib || perPod < 1) return undefined;
  const options = estimateOptions(spec, memoryMib);
  const memoryBytes = memoryMib * MiB;
  try {
    if (spec.sizing?.autoTensorParallel) {
      const family = ctx.instanceTypesOfPool(it.pool).filter((m) => m.accelerators > 0);
      const maxGpus = Math.max(perPod, ...family.map((m) => m.accelerators));
      const choice = chooseTensorParallelSize(model, { memoryBytes, maxGpus }, options);
      if (!choice.fits) return { role: role.role, instanceType: role.instanceType, fits: false, message: choice.message, ...(choice.estimate ? { estimate: roleEstimate(role.role, role.instanceType, choice.estimate, memoryBytes, false, choice.message) } : {}) };
      const chosen = family.find((m) => m.accelerators === choice.tensorParallelSize);
      if (!chosen) {
        const message = `INSUFFICIENT_GPU_MEMORY: tensor-parallel ${choice.tensorParallelSize} fits, but pool "${it.pool}" offers no InstanceType of ${choice.tensorParallelSize} GPUs (it offers ${family.map((m) => m.name).join(', ')})`;
        return { role: role.role, instanceType: role.instanceType, fits: false, message, estimate: roleEstimate(role.role, role.instanceType, choice.estimate, memoryBytes, false, message) };
      }
      return { role: role.role, instanceType: chosen.name, fits: true, message: '', estimate: roleEstimate(role.role, chosen.name, choice.estimate, memoryBytes, true, '') };
    }
    // The engine runs tensor parallel over every GPU of the replica (vLLM's --tensor-parallel-size
    // is the pod's GPUs; a multi-node replica splits the model over all of them).
    const tp = perPod * (role.size || 1);
    const estimate = estimateMemory(model, { ...options, tensorParallelSize: tp });
    if (estimate.perGpu.total <= memoryBytes) return { role: role.role, instanceType: role.instanceType, fits: true, message: '', estimate: roleEstimate(role.role, role.instanceType, estimate, memoryBytes, true, '') };
    const u = estimate.gpuMemoryUtilization;
    const message =
      `INSUFFICIENT_GPU_MEMORY: needs ${gib(estimate.total * u)} GiB per replica (${estimate.contextLength} tokens × ${estimate.concurrency} sequences); ` +
      `${role.instanceType} gives ${tp} × ${gib(memoryBytes)} GiB, at ${u} utilisation ${gib(memoryBytes * u)} GiB per GPU; ` +
      `at tensor-parallel ${tp} each GPU needs ${gib(estimate.perGpu.total * u)} GiB (weights ${gib(estimate.perGpu.weights)}, KV cache ${gib(estimate.perGpu.kvCache)}, activations ${gib(estimate.perGpu.activations)}, CUDA graphs ${gib(estimate.perGpu.cudaGraphs)}): ` +
      'lower sizing.contextLength or sizing.concurrency, use sizing.kvCacheDtype fp8 or a quantized artifact, or an InstanceType with more or larger GPUs (sizing.autoTensorParallel picks one)';
    return { role: role.role, instanceType: role.instanceType, fits: false, message, estimate: roleEstimate(role.role, role.instanceType, estimate, memoryBytes, false, message) };
  } catch (err) {
    if (err instanceof ModelEstimateError) return { invalid: `options the estimate takes (${err.message})` };
    throw err;
  }
}

function roleEstimate(role: string, instanceType: string, e: MemoryEstimate, gpuMemoryBytes: number, fits: boolean, message: string): RoleMemoryEstimate {
  return {
    role,
    instanceType,
    tensorParallelSize: e.tensorParallelSize,
    weightsBytes: e.perGpu.weights,
    kvCacheBytes: e.perGpu.kvCache,
    activationsBytes: e.perGpu.activations,
    cudaGraphsBytes: e.perGpu.cudaGraphs,
    totalBytes: e.perGpu.total,
    gpuMemoryBytes,
    contextLength: e.contextLength,
    concurrency: e.concurrency,
    gpuMemoryUtilization: e.gpuMemoryUtilization,
    kvCacheBytesPerToken: e.kvCacheBytesPerToken,
    fits,
    message,
  };
}

function gib(bytes: number): string {
  return (bytes / GiB).toFixed(1);
}

/** The deployment's memory verdict for its status: per-role estimates, whether replicas may be created, and the MemoryFits condition's words. */
export interface MemoryVerdict {
  /** True: create replicas. False: hold them back (not described yet, or it does not fit). */
  admit: boolean;
  fits: boolean;
  reason: 'Fits' | 'InsufficientGpuMemory' | 'EstimatePending' | 'NotEstimated';
  message: string;
  roles: RoleSizing[];
}

/** What the controller does with a deployment that names an artifact, from the artifact's description. */
export function memoryVerdict(spec: ModelDeploymentSpec, state: ArtifactModelState, ctx: SizingContext): MemoryVerdict {
  if (state.kind === 'pending') return { admit: false, fits: false, reason: 'EstimatePending', message: `${state.message}: replicas wait for the memory estimate`, roles: [] };
  if (state.kind === 'none') return { admit: true, fits: false, reason: 'NotEstimated', message: `${state.message}: replicas are placed without a memory estimate`, roles: [] };
  const { roles, problems } = sizeDeployment(spec, state.model, ctx);
  const refused = [...problems.map((p) => p.message), ...unfit(roles)];
  if (refused.length > 0) return { admit: false, fits: false, reason: 'InsufficientGpuMemory', message: refused.join('; '), roles };
  const summary = roles.map((r) => `${r.role} on ${r.instanceType}: ${gib(r.estimate!.totalBytes)} of ${gib(r.estimate!.gpuMemoryBytes)} GiB per GPU at tensor-parallel ${r.estimate!.tensorParallelSize}`).join('; ');
  return { admit: true, fits: true, reason: 'Fits', message: summary || 'no role names an InstanceType with known GPU memory', roles };
}

/** "roles[0] (h100.1x): INSUFFICIENT_GPU_MEMORY: needs …" for each role that does not fit. */
export function unfit(roles: readonly RoleSizing[]): string[] {
  return roles.filter((r) => !r.fits).map((r) => `roles[${r.index}] (${r.instanceType}): ${r.message}`);
}

/** The role as its replicas are created: with the InstanceType auto tensor parallel chose. */
export function sizedRole(role: DeploymentRole, roles: readonly RoleSizing[] | undefined): DeploymentRole {
  const chosen = roles?.find((r) => r.role === role.role)?.instanceType;
  return chosen && chosen !== role.instanceType ? { ...role, instanceType: chosen } : role;
}
