// GPU memory sizing through the scheduler's gRPC API on real NATS. The artifact records are
// written into the `artifacts` bucket as model delivery's control role writes them: a resolved
// status, then the model description read from a checkpoint of a real model (sparse
// safetensors shards with the published headers, described by libs/model-estimate exactly as the
// control role describes the hub's files). Covers the refusal with the numbers, auto tensor
// parallel down to the engine's command line, and replicas held back until the description
// arrives.
import { status } from '@grpc/grpc-js';
import {
  ArtifactPhase,
  ArtifactSourceKind,
  Buckets,
  ModelArtifact,
  OwnerLabels,
  WorkloadPhase,
  type ArtifactModel,
  type ModelDeployment,
  type ModelSizing,
  type Workload,
} from '@gpufleet/contracts';
import { engineSpecOf } from '@gpufleet/deployments-core';
import { buildEngineCommand } from '@gpufleet/engine-presets';
import { callUnary } from '@gpufleet/grpc-kit';
import { KvStore } from '@gpufleet/messaging';
import { artifactModelOf, describeArtifact, DirectoryRangeReader } from '@gpufleet/model-estimate';
import { grpcError, StopWaiting, waitFor, writeSparseCheckpoint } from '@gpufleet/testing';
import { deployment } from '../__fixtures__/requests';
import { SchedulerHarness } from '../__fixtures__/scheduler-harness';

const NS = 'default';
const DIGEST = `sha256:${'ab'.repeat(32)}`;
/** ASCII of the numbers INSUFFICIENT_GPU_MEMORY gives: "needs 139.2 GiB per replica". */
const GIB_NUMBER = /needs \d+\.\d GiB per replica \(\d+ tokens × \d+ sequences\)/;

let h: SchedulerHarness;
let artifacts: KvStore<ModelArtifact>;
let pool = '';
/** Llama-3.1-70B (141 GB of bf16 weights in 30 shards) and Llama-3.1-8B (16 GB in 4), as model delivery describes them. */
let llama70b: ArtifactModel;
let llama8b: ArtifactModel;

async function describeFixture(fixture: string, shards: number, totalSize: number): Promise<ArtifactModel> {
  const checkpoint = writeSparseCheckpoint(fixture, { dtype: 'BF16', shards, totalSize });
  try {
    return artifactModelOf(await describeArtifact(new DirectoryRangeReader(checkpoint.dir), checkpoint.files));
  } finally {
    checkpoint.dispose();
  }
}

/** The record the control role keeps: spec, then status as resolution and description fill it. */
function artifactRecord(name: string, model?: ArtifactModel): ModelArtifact {
  return ModelArtifact.fromPartial({
    uid: `uid-${name}`,
    spec: { name, namespace: NS, source: { kind: ArtifactSourceKind.ARTIFACT_SOURCE_KIND_HUGGINGFACE, repo: `meta-llama/${name}` } },
    status: {
      phase: ArtifactPhase.ARTIFACT_PHASE_READY,
      commit: 'c'.repeat(40),
      manifestDigest: DIGEST,
      fileCount: 5,
      totalBytes: model?.weightsBytes ?? 0,
      ...(model ? { model, modelDigest: DIGEST } : {}),
    },
  });
}

const md = () => ({ metadata: h.admin() });

function sized(name: string, artifact: string, instanceType: string, sizing: Partial<ModelSizing>) {
  return deployment({
    name,
    model: '',
    artifact,
    roles: [{ role: 'server', replicas: 1, size: 1, instanceType }],
    sizing: { contextLength: 0, concurrency: 0, gpuMemoryUtilization: 0, kvCacheDtype: '', autoTensorParallel: false, ...sizing },
  });
}

/**
 * Creates a deployment naming an artifact just written to the bucket: the scheduler checks the
 * name against its mirror of the bucket, which catches up a moment later, so a refusal for an
 * unknown artifact is tried again until then.
 */
function createOnceMirrored(spec: ReturnType<typeof sized>): Promise<unknown> {
  return waitFor(`the scheduler to mirror the artifact ${spec.artifact}`, async () => {
    try {
      return await callUnary(h.clients.deployments, h.clients.deployments.createDeployment, { spec }, md());
    } catch (err) {
      const e = err as { code?: number; message?: string };
      if (e.code === status.INVALID_ARGUMENT && e.message?.includes('expected a ModelArtifact')) return undefined;
      throw new StopWaiting((err as Error).message);
    }
  });
}

async function getDeployment(name: string): Promise<ModelDeployment> {
  return (await callUnary(h.clients.deployments, h.clients.deployments.getDeployment, { namespace: NS, name }, md())).deployment!;
}

async function workloadsOf(name: string): Promise<Workload[]> {
  const { workloads } = await callUnary(h.clients.scheduling, h.clients.scheduling.listWorkloads, { namespace: NS, phase: WorkloadPhase.WORKLOAD_PHASE_UNSPECIFIED, clusterQueue: '', pageSize: 0, pageToken: '' }, md());
  return workloads.filter((w) => w.spec?.labels[OwnerLabels.deployment] === name);
}

function memoryFits(d: ModelDeployment) {
  return d.status?.conditions.find((c) => c.type === 'MemoryFits');
}

beforeAll(async () => {
  h = await SchedulerHarness.start();
  artifacts = await KvStore.open(h.nc.jetstream(), Buckets.artifacts(h.cluster), ModelArtifact);
  pool = (await callUnary(h.clients.capacity, h.clients.capacity.listPools, { pageSize: 0, pageToken: '' }, md())).pools[0].name;
  [llama70b, llama8b] = await Promise.all([describeFixture('llama-3.1-70b', 30, 141_107_412_992), describeFixture('llama-3.1-8b', 4, 16_060_522_496)]);
  await artifacts.put(`${NS}.llama-70b`, artifactRecord('llama-70b', llama70b));
  // The scheduler mirrors the bucket: wait until a deployment naming the artifact is sized by it.
  await waitFor('the scheduler to mirror the artifact record', async () => {
    const err = await grpcError(callUnary(h.clients.deployments, h.clients.deployments.createDeployment, { spec: sized('probe', 'llama-70b', `${pool}.1x`, {}) }, md()));
    return err.code === status.FAILED_PRECONDITION || undefined;
  });
}, 60_000);

afterAll(() => h?.stop());

describe('a described artifact too big for its InstanceType', () => {
  it('is refused with FAILED_PRECONDITION INSUFFICIENT_GPU_MEMORY and the numbers, and nothing is stored', async () => {
    const err = await grpcError(callUnary(h.clients.deployments, h.clients.deployments.createDeployment, { spec: sized('too-big', 'llama-70b', `${pool}.1x`, { contextLength: 8192 }) }, md()));
    expect(status[err.code]).toBe('FAILED_PRECONDITION');
    expect(err.details).toMatch(/^INSUFFICIENT_GPU_MEMORY: roles\[0\] \(.+\.1x\): /);
    expect(err.details).toMatch(GIB_NUMBER);
    expect(err.details).toContain('(8192 tokens × 1 sequences)');
    // The per-GPU breakdown, the weights alone (131.4 GiB of bf16) above one 80 GB GPU.
    expect(err.details).toMatch(/at tensor-parallel 1 each GPU needs \d+\.\d GiB \(weights 131\.\d, KV cache \d+\.\d, activations \d+\.\d, CUDA graphs \d+\.\d\)/);
    expect(err.details).toContain('sizing.autoTensorParallel');
    expect(String(err.metadata.get('gpufleet-field')[0] ?? '')).toBe('roles[0].instanceType');

    const missing = await grpcError(callUnary(h.clients.deployments, h.clients.deployments.getDeployment, { namespace: NS, name: 'too-big' }, md()));
    expect(status[missing.code]).toBe('NOT_FOUND');
    expect(await workloadsOf('too-big')).toEqual([]);
  });
});

describe('sizing.autoTensorParallel', () => {
  it('picks the smallest <pool>.<N>x that fits and the replica runs vLLM at that tensor-parallel size', async () => {
    await callUnary(h.clients.deployments, h.clients.deployments.createDeployment, { spec: sized('auto-tp', 'llama-70b', `${pool}.1x`, { contextLength: 32768, concurrency: 4, gpuMemoryUtilization: 0.9, autoTensorParallel: true }) }, md());
    // 141 GB of weights: two 80 GB GPUs leave no room for 4 × 32k tokens of KV cache, four do.
    const admitted = await waitFor(
      'the auto-tp replica to be admitted',
      async () => (await workloadsOf('auto-tp')).find((w) => w.status?.phase === WorkloadPhase.WORKLOAD_PHASE_ADMITTED),
      { timeoutMs: 15_000, intervalMs: 50 },
    );
    expect(admitted.spec?.podSets[0].resources?.accelerator?.whole).toBe(4);
    const placement = admitted.status!.placements[0];
    expect(placement.acceleratorIds).toHaveLength(4);

    const d = await getDeployment('auto-tp');
    expect(d.status?.memory).toEqual([expect.objectContaining({ role: 'server', instanceType: `${pool}.4x`, tensorParallelSize: 4, fits: true, contextLength: 32768, concurrency: 4, gpuMemoryUtilization: 0.9 })]);
    expect(memoryFits(d)).toMatchObject({ status: true, reason: 'Fits' });
    expect(memoryFits(d)?.message).toContain(`server on ${pool}.4x:`);

    // What the node runtime runs for the pod placed on those four GPUs, the artifact's weights
    // at the node cache's copy (node-runtime-core's planEngine does the same).
    const run = admitted.spec!.template!.engine!;
    const onNode = { ...run, model: '/var/lib/gpufleet/model-cache/gpu-0/hf/models--meta-llama--llama-70b/snapshots/c', servedModelName: run.servedModelName || run.artifact };
    const command = buildEngineCommand(engineSpecOf(onNode, { acceleratorIds: placement.acceleratorIds, port: 8000 }));
    const flag = (name: string) => command.args[command.args.indexOf(name) + 1];
    expect(command.command).toBe('vllm');
    expect(flag('--tensor-parallel-size')).toBe('4');
    expect(flag('--max-model-len')).toBe('32768');
    expect(flag('--gpu-memory-utilization')).toBe('0.9');
    expect(command.args.filter((a) => a === '--gpu-memory-utilization')).toHaveLength(1);
  });
});

describe('a deployment created before its artifact is described', () => {
  it('is accepted with MemoryFits EstimatePending, admits nothing, and proceeds once the description fits', async () => {
    await artifacts.put(`${NS}.llama-8b`, artifactRecord('llama-8b'));
    await createOnceMirrored(sized('early-fits', 'llama-8b', `${pool}.1x`, { contextLength: 8192 }));
    const pending = await waitFor('MemoryFits EstimatePending', async () => {
      const d = await getDeployment('early-fits');
      return memoryFits(d)?.reason === 'EstimatePending' ? d : undefined;
    });
    expect(memoryFits(pending)).toMatchObject({ status: false, message: expect.stringContaining('artifact llama-8b is being described') });
    expect(pending.status?.replicas).toEqual([expect.objectContaining({ state: 'Pending', workload: '', message: expect.stringContaining('held back: ') })]);
    expect(await workloadsOf('early-fits')).toEqual([]);

    // Model delivery writes the description: the replica is created and admitted.
    await artifacts.put(`${NS}.llama-8b`, artifactRecord('llama-8b', llama8b));
    const admitted = await waitFor(
      'the early-fits replica to be admitted',
      async () => (await workloadsOf('early-fits')).find((w) => w.status?.phase === WorkloadPhase.WORKLOAD_PHASE_ADMITTED),
      { timeoutMs: 15_000, intervalMs: 50 },
    );
    expect(admitted.spec?.podSets[0].resources?.accelerator?.whole).toBe(1);
    const fits = await waitFor('MemoryFits Fits', async () => {
      const d = await getDeployment('early-fits');
      return memoryFits(d)?.reason === 'Fits' ? d : undefined;
    });
    expect(memoryFits(fits)).toMatchObject({ status: true, message: expect.stringMatching(/^server on .+\.1x: \d+\.\d of \d+\.\d GiB per GPU at tensor-parallel 1$/) });
    expect(fits.status?.memory).toEqual([expect.objectContaining({ role: 'server', tensorParallelSize: 1, fits: true, contextLength: 8192 })]);
  });

  it('stays held back with the numbers in the condition when the description says it cannot fit', async () => {
    await artifacts.put(`${NS}.llama-70b-late`, artifactRecord('llama-70b-late'));
    await createOnceMirrored(sized('early-unfit', 'llama-70b-late', `${pool}.1x`, { contextLength: 8192 }));
    await waitFor('MemoryFits EstimatePending', async () => memoryFits(await getDeployment('early-unfit'))?.reason === 'EstimatePending' || undefined);

    await artifacts.put(`${NS}.llama-70b-late`, artifactRecord('llama-70b-late', llama70b));
    const held = await waitFor('MemoryFits InsufficientGpuMemory', async () => {
      const d = await getDeployment('early-unfit');
      return memoryFits(d)?.reason === 'InsufficientGpuMemory' ? d : undefined;
    });
    const condition = memoryFits(held)!;
    expect(condition.status).toBe(false);
    expect(condition.message).toMatch(/^roles\[0\] \(.+\.1x\): INSUFFICIENT_GPU_MEMORY: /);
    expect(condition.message).toMatch(GIB_NUMBER);
    expect(held.status?.memory).toEqual([expect.objectContaining({ role: 'server', tensorParallelSize: 1, fits: false })]);
    expect(held.status?.replicas).toEqual([expect.objectContaining({ state: 'Pending', workload: '', message: expect.stringContaining('held back: roles[0]') })]);
    // Still nothing admitted after the controller has acted on the description.
    expect(await workloadsOf('early-unfit')).toEqual([]);
  });
});
