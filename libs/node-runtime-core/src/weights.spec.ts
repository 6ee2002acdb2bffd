import { WorkloadPhase } from '@gpufleet/contracts';
import type { PodTemplate } from '@gpufleet/contracts';
import { desiredPods, type DesiredPod } from './desired-pods';
import { planPod, type EnginePodPlan, type FailedPodPlan, type PlanContext } from './pod-plan';
import { podRuntimeStatus } from './pod-status';
import { resolvePodWeights, type WeightsCopy, type WeightsLookup } from './weights';
import { engineTemplate, inventory, ledger, NODE, placement, workload, workloadMap } from './__fixtures__/cluster';

const STATE = '/var/lib/gpufleet/node-runtime/h100-0';
const CACHE = '/var/lib/gpufleet/model-cache/h100-0';
const copy = (extra: Partial<WeightsCopy>): WeightsCopy => ({ state: 'Ready', percent: 100, bytesDone: 10, bytesTotal: 10, reason: '', message: '', path: '', ...extra });
const lookup = (copies: Record<string, WeightsCopy>): WeightsLookup => ({ copyOf: (ns, name) => copies[`${ns}.${name}`] });

const ctx = (weights: WeightsLookup, extra: Partial<PlanContext> = {}): PlanContext => ({
  inventory: inventory(),
  stateDir: STATE,
  engineMode: 'simulated',
  engineSim: { command: 'node', args: ['/repo/apps/engine-sim/src/main.ts'], cwd: '/repo' },
  stopGraceMs: 30_000,
  weights,
  ...extra,
});

function pod(template: PodTemplate): DesiredPod {
  const [one] = desiredPods(NODE, ledger([{ workload: 'team-a/llama', pod: placement({ acceleratorIds: ['nvidia-1'] }) }]), workloadMap(workload('llama', template, WorkloadPhase.WORKLOAD_PHASE_ADMITTED)));
  return one;
}

describe('resolvePodWeights', () => {
  it('waits while the node downloads, saying how far it is', () => {
    expect(() => resolvePodWeights('team-a', 'llama', lookup({ 'team-a.llama': copy({ state: 'Downloading', percent: 45.7, bytesDone: 457, bytesTotal: 1000 }) }))).toThrow(
      'WEIGHTS_PENDING: waiting for weights: Downloading 45% (457 of 1000 bytes) (artifact team-a/llama)',
    );
    expect(() => resolvePodWeights('team-a', 'llama', lookup({}))).toThrow(/^WEIGHTS_PENDING: waiting for weights: this node's cache has no copy/);
    expect(() => resolvePodWeights('team-a', 'llama', lookup({ 'team-a.llama': copy({ state: 'Evicted', path: '' }) }))).toThrow(/WEIGHTS_PENDING: waiting for weights: Evicted/);
  });

  it('fails with the copy’s reason when the cache gave up', () => {
    expect(() => resolvePodWeights('team-a', 'llama', lookup({ 'team-a.llama': copy({ state: 'Failed', reason: 'InsufficientCapacity', message: 'needs 16 GiB, 2 GiB free' }) }))).toThrow(
      'WEIGHTS_FAILED: artifact team-a/llama could not be fetched to this node: InsufficientCapacity: needs 16 GiB, 2 GiB free',
    );
  });

  it('gives a plain tree as the model path, bound at the same path', () => {
    const tree = `${CACHE}/trees/abc`;
    expect(resolvePodWeights('team-a', 'llama', lookup({ 'team-a.llama': copy({ path: tree }) }))).toEqual({ modelPath: tree, binds: [{ source: tree, target: tree }], env: {} });
  });

  it('points HF_HUB_CACHE at a Hugging Face layout, offline, and binds the repository folder its links lead into', () => {
    const snapshot = `${CACHE}/hf/models--acme--llm/snapshots/0123abcd`;
    expect(resolvePodWeights('team-a', 'llama', lookup({ 'team-a.llama': copy({ path: snapshot }) }))).toEqual({
      modelPath: snapshot,
      binds: [{ source: `${CACHE}/hf/models--acme--llm`, target: `${CACHE}/hf/models--acme--llm` }],
      env: { HF_HUB_CACHE: `${CACHE}/hf`, HF_HUB_OFFLINE: '1' },
    });
  });
});

describe('planPod with an artifact', () => {
  const template = (): PodTemplate => {
    const t = engineTemplate({ artifact: 'llama' });
    return { ...t, engine: { ...t.engine!, model: '', servedModelName: '' } };
  };

  it('reports the pod Starting with the download’s progress until the copy is Ready', () => {
    const plan = planPod(pod(template()), 18_000, ctx(lookup({ 'team-a.llama': copy({ state: 'Downloading', percent: 45, bytesTotal: 0 }) }))) as FailedPodPlan;
    expect(plan).toMatchObject({ kind: 'failed', reason: 'WEIGHTS_PENDING' });
    const status = podRuntimeStatus({ plan, processes: [], node: NODE, host: '127.0.0.1', runtimeUrl: '', now: new Date() });
    expect(status).toMatchObject({ state: 'Starting', message: 'WEIGHTS_PENDING: waiting for weights: Downloading 45% (artifact team-a/llama)' });
  });

  it('is Failed with the copy’s reason when the copy failed', () => {
    const plan = planPod(pod(template()), 18_000, ctx(lookup({ 'team-a.llama': copy({ state: 'Failed', reason: 'DigestMismatch' }) }))) as FailedPodPlan;
    expect(podRuntimeStatus({ plan, processes: [], node: NODE, host: '127.0.0.1', runtimeUrl: '', now: new Date() }).state).toBe('Failed');
  });

  it('starts the engine on the copy’s path, named after the artifact, with the copy bound read-only in its sandbox', () => {
    const snapshot = `${CACHE}/hf/models--acme--llm/snapshots/0123abcd`;
    const sandbox = { uidBase: 200_000, deviceRoot: '/dev', hidden: [STATE] };
    const plan = planPod(pod(template()), 18_000, ctx(lookup({ 'team-a.llama': copy({ path: snapshot }) }), { sandbox })) as EnginePodPlan;
    expect(plan.kind).toBe('engine');
    expect((plan.process.args ?? []).slice(1, 5)).toEqual(['serve', snapshot, '--served-model-name', 'llama']);
    expect(plan.process.env).toMatchObject({ HF_HUB_CACHE: `${CACHE}/hf`, HF_HUB_OFFLINE: '1' });
    expect(plan.process.sandbox?.readOnly).toContainEqual({ source: `${CACHE}/hf/models--acme--llm`, target: `${CACHE}/hf/models--acme--llm` });
    expect(plan.process.sandbox?.writable).not.toContain(`${CACHE}/hf/models--acme--llm`);
  });
});
