import { ArtifactPhase, ModelArtifact, type ModelSizing } from '@gpufleet/contracts';
import { artifactModelOf, chooseTensorParallelSize, GiB, parseModelConfig, weightsFromConfig, type ModelDescription } from '@gpufleet/model-estimate';
import { modelFixtureConfig } from '@gpufleet/testing';
import { buildEngineCommand } from '@gpufleet/engine-presets';
import { planDeployment } from './deployment-plan';
import { engineSpecOf } from './engine-run';
import { validateDeploymentSpec } from './deployment-spec';
import { artifactModelState, memoryVerdict, sizeDeployment, sizedRole, sizingArgs, type SizingContext } from './memory-sizing';
import { replicaWorkloadSpec } from './replica-workload';
import { context, deployment, deploymentSpec, H100_POOL } from './__fixtures__/records';

/** Llama-3.1-70B (141 GB of bf16 weights) and -8B, described from their real config.json. */
function model(fixture: string): ModelDescription {
  const shape = parseModelConfig(modelFixtureConfig(fixture), 'config.json');
  return { shape, weights: weightsFromConfig(shape) };
}
const llama70b = model('llama-3.1-70b');
const llama8b = model('llama-3.1-8b');

/** The dev fleet's H100 family: .1x .2x .4x .8x of 81 559 MiB each. */
const sizingContext: SizingContext = {
  ...context,
  instanceTypesOfPool: (pool) => (pool === H100_POOL ? [1, 2, 4, 8].map((n) => ({ name: `${pool}.${n}x`, accelerators: n, acceleratorMemoryMib: 81_559 })) : []),
};

const withArtifact = (sizing: ModelSizing | undefined, roles = deploymentSpec().roles) =>
  deploymentSpec({ model: '', artifact: 'llama-70b', sizing, roles });

describe('memory sizing of a deployment from its artifact’s model', () => {
  it('refuses Llama-3.1-70B on one 80 GB H100 with the numbers', () => {
    const { roles, problems } = sizeDeployment(withArtifact({ contextLength: 8192, concurrency: 1, gpuMemoryUtilization: 0, kvCacheDtype: '', autoTensorParallel: false }), llama70b, sizingContext);
    expect(problems).toEqual([]);
    expect(roles).toHaveLength(1);
    expect(roles[0]).toMatchObject({ role: 'server', instanceType: `${H100_POOL}.1x`, fits: false });
    // The preset's 0.92 utilisation, the weights alone above one GPU.
    expect(roles[0].message).toMatch(/^INSUFFICIENT_GPU_MEMORY: needs \d+\.\d GiB per replica \(8192 tokens × 1 sequences\); h100-80gb-hbm3-x86-64\.1x gives 1 × 79\.6 GiB, at 0\.92 utilisation 73\.3 GiB per GPU; at tensor-parallel 1 each GPU needs \d+\.\d GiB \(weights 131\.\d, KV cache 2\.5, /);
    expect(roles[0].estimate).toMatchObject({ tensorParallelSize: 1, contextLength: 8192, concurrency: 1, gpuMemoryUtilization: 0.92, fits: false, kvCacheBytesPerToken: 2 * 80 * 8 * 128 * 2 });
  });

  it('picks the smallest tensor-parallel InstanceType that fits when asked', () => {
    const spec = withArtifact({ contextLength: 32768, concurrency: 4, gpuMemoryUtilization: 0.9, kvCacheDtype: '', autoTensorParallel: true });
    const { roles } = sizeDeployment(spec, llama70b, sizingContext);
    const expected = chooseTensorParallelSize(llama70b, { memoryBytes: 81_559 * 1024 * 1024, maxGpus: 8 }, { contextLength: 32768, concurrency: 4, gpuMemoryUtilization: 0.9, maxNumSeqs: 256, maxNumBatchedTokens: 8192 });
    expect(expected).toMatchObject({ fits: true, tensorParallelSize: 4 });
    expect(roles[0]).toMatchObject({ instanceType: `${H100_POOL}.4x`, fits: true, estimate: { tensorParallelSize: 4, gpuMemoryBytes: 81_559 * 1024 * 1024 } });
    expect(roles[0].estimate!.totalBytes).toBeLessThanOrEqual(81_559 * 1024 * 1024);
    // The replicas are created with that InstanceType, so vLLM gets --tensor-parallel-size 4.
    const role = sizedRole(spec.roles[0], roles);
    expect(role.instanceType).toBe(`${H100_POOL}.4x`);
    const w = replicaWorkloadSpec(spec, role, 0, context.resolveInstanceType(role.instanceType)!.resources, 'abcde');
    expect(w.podSets[0].resources?.accelerator?.whole).toBe(4);
    // The memory share replaces the preset's own flag rather than repeating it among the extra arguments.
    expect(w.template?.engine?.engine?.extraArgs).toEqual(['--max-model-len', '32768']);
    expect(w.template?.engine?.gpuMemoryUtilization).toBe(0.9);
  });

  it('refuses a context longer than the model’s, and auto tensor parallel without an InstanceType', () => {
    const long = sizeDeployment(withArtifact({ contextLength: 200_000, concurrency: 0, gpuMemoryUtilization: 0, kvCacheDtype: '', autoTensorParallel: false }), llama8b, sizingContext);
    expect(long.problems.map((p) => p.message)).toEqual(['sizing.contextLength: expected at most the model\'s 131072 tokens (max_position_embeddings of artifact llama-70b), got 200000']);
    const explicit = withArtifact({ contextLength: 0, concurrency: 0, gpuMemoryUtilization: 1.5, kvCacheDtype: 'int4', autoTensorParallel: true }, [
      { role: 'server', replicas: 1, size: 1, instanceType: '', resources: { accelerator: { whole: 1 } }, extraArgs: [], env: {}, envFromSecret: {} } as never,
    ]);
    expect(validateDeploymentSpec(explicit, context).map((p) => p.field)).toEqual(expect.arrayContaining(['sizing.gpuMemoryUtilization', 'sizing.kvCacheDtype', 'roles[0].instanceType']));
  });

  it('passes the sizing to vLLM and SGLang as their own flags, fp8 KV cache included', () => {
    const sizing = { contextLength: 16384, concurrency: 8, gpuMemoryUtilization: 0.85, kvCacheDtype: 'fp8', autoTensorParallel: false };
    expect(sizingArgs('vllm', sizing)).toEqual(['--max-model-len', '16384', '--kv-cache-dtype', 'fp8']);
    expect(sizingArgs('sglang', sizing)).toEqual(['--context-length', '16384', '--kv-cache-dtype', 'fp8']);
    // The memory share goes in place of the preset's (which the extra arguments may not repeat).
    const spec = withArtifact(sizing);
    const run = replicaWorkloadSpec(spec, spec.roles[0], 0, context.resolveInstanceType(spec.roles[0].instanceType)!.resources, 'abcde').template!.engine!;
    for (const [engine, flag] of [['vllm', '--gpu-memory-utilization'], ['sglang', '--mem-fraction-static']] as const) {
      const command = buildEngineCommand(engineSpecOf({ ...run, model: '/models/llama-70b', engine: { ...run.engine!, engine, extraArgs: sizingArgs(engine, sizing) } }, { acceleratorIds: ['0'], port: 8000 }));
      expect(command.args.filter((a) => a === flag)).toEqual([flag]);
      expect(command.args[command.args.indexOf(flag) + 1]).toBe('0.85');
    }
    expect(sizingArgs('llama-cpp', sizing)).toEqual([]);
  });

  it('holds replicas back while the artifact is being described, and once it says the model does not fit', () => {
    const spec = withArtifact({ contextLength: 8192, concurrency: 1, gpuMemoryUtilization: 0, kvCacheDtype: '', autoTensorParallel: false });
    const resolving = ModelArtifact.fromPartial({ status: { phase: ArtifactPhase.ARTIFACT_PHASE_READY, manifestDigest: 'sha256:aa' } });
    const pendingVerdict = memoryVerdict(spec, artifactModelState('llama-70b', resolving), sizingContext);
    expect(pendingVerdict).toMatchObject({ admit: false, reason: 'EstimatePending' });
    const held = planDeployment({ deployment: deployment(spec), workloads: [], podsOf: () => [], nodeOf: () => ({ ready: true }), now: 0, rescheduleAfterMs: 300_000, memory: pendingVerdict });
    expect(held.create).toEqual([]);
    expect(held.status.replicas.map((r) => r.message)).toEqual([expect.stringContaining('held back: artifact llama-70b is being described'), expect.stringContaining('held back')]);
    expect(held.status.conditions.find((c) => c.type === 'MemoryFits')).toMatchObject({ status: false, reason: 'EstimatePending' });

    const described = ModelArtifact.fromPartial({ status: { phase: ArtifactPhase.ARTIFACT_PHASE_READY, manifestDigest: 'sha256:aa', modelDigest: 'sha256:aa', model: artifactModelOf(llama70b) } });
    const refused = memoryVerdict(spec, artifactModelState('llama-70b', described), sizingContext);
    expect(refused).toMatchObject({ admit: false, fits: false, reason: 'InsufficientGpuMemory', message: expect.stringMatching(/^roles\[0\] \(h100-80gb-hbm3-x86-64\.1x\): INSUFFICIENT_GPU_MEMORY: needs /) });
    const plan = planDeployment({ deployment: deployment(spec), workloads: [], podsOf: () => [], nodeOf: () => ({ ready: true }), now: 0, rescheduleAfterMs: 300_000, memory: refused });
    expect(plan.create).toEqual([]);
    expect(plan.status.memory[0]).toMatchObject({ fits: false, tensorParallelSize: 1 });

    const fits = memoryVerdict({ ...spec, sizing: { ...spec.sizing!, autoTensorParallel: true } }, artifactModelState('llama-70b', described), sizingContext);
    expect(fits).toMatchObject({ admit: true, fits: true, reason: 'Fits' });
    expect(fits.message).toMatch(/^server on h100-80gb-hbm3-x86-64\.2x: \d+\.\d of 79\.6 GiB per GPU at tensor-parallel 2$/);
    expect(fits.roles[0].estimate!.totalBytes / GiB).toBeLessThan(79.6);
  });

  it('lets replicas go without an estimate when the artifact is not a model', () => {
    const notModel = ModelArtifact.fromPartial({ status: { phase: ArtifactPhase.ARTIFACT_PHASE_READY, manifestDigest: 'sha256:bb', modelDigest: 'sha256:bb', estimateError: 'MISSING_MODEL_FILES: the artifact has neither config.json nor a .gguf file' } });
    const verdict = memoryVerdict(withArtifact(undefined), artifactModelState('data', notModel), sizingContext);
    expect(verdict).toMatchObject({ admit: true, fits: false, reason: 'NotEstimated' });
    expect(verdict.message).toContain('MISSING_MODEL_FILES');
  });
});
