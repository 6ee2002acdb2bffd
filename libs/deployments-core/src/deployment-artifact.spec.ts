import { normalizeDeploymentSpec, validateDeploymentSpec } from './deployment-spec';
import { replicaWorkloadSpec } from './replica-workload';
import { templateHash } from './template-hash';
import { weightsReadyCondition } from './conditions';
import { context, deploymentSpec } from './__fixtures__/records';

const resources = { accelerator: { whole: 1 } } as never;

describe('a deployment that names a ModelArtifact', () => {
  it('may leave the model empty: the engine is given the node cache’s path', () => {
    expect(validateDeploymentSpec(deploymentSpec({ model: '', artifact: 'llama-3-1-8b' }), context)).toEqual([]);
  });

  it('still needs a model or an artifact', () => {
    const messages = validateDeploymentSpec(deploymentSpec({ model: '', artifact: '' }), context).map((p) => p.message);
    expect(messages).toEqual(['model: expected a model path or artifact reference without spaces (at most 1024 characters), or an artifact, got an empty string']);
  });

  it('refuses an artifact name that is not a DNS-1123 label', () => {
    const problems = validateDeploymentSpec(deploymentSpec({ artifact: 'Llama_3' }), context);
    expect(problems.map((p) => p.field)).toEqual(['artifact']);
  });

  it('refuses an artifact the namespace does not have, when the caller can tell', () => {
    const known = { ...context, resolveArtifact: (ns: string, name: string) => ns === 'team-a' && name === 'llama' };
    expect(validateDeploymentSpec(deploymentSpec({ namespace: 'team-a', artifact: 'llama' }), known)).toEqual([]);
    expect(validateDeploymentSpec(deploymentSpec({ namespace: 'team-a', artifact: 'qwen' }), known).map((p) => p.message)).toEqual([
      'artifact: expected a ModelArtifact of namespace "team-a" (see `gpufleet get artifacts -n team-a`), got "qwen"',
    ]);
  });

  it('names the served model after the artifact when neither model nor served name is given', () => {
    const spec = normalizeDeploymentSpec(deploymentSpec({ model: '', servedModelName: '', artifact: 'qwen-2-5-7b' }));
    const workload = replicaWorkloadSpec(spec, spec.roles[0]!, 0, resources, 'abcde');
    expect(workload.template?.engine).toMatchObject({ artifact: 'qwen-2-5-7b', model: '', servedModelName: 'qwen-2-5-7b' });
  });

  it('carries the artifact in each replica’s EngineRun', () => {
    const spec = deploymentSpec({ artifact: 'llama' });
    expect(replicaWorkloadSpec(spec, spec.roles[0]!, 0, resources, 'abcde').template?.engine?.artifact).toBe('llama');
  });

  it('keeps the template hash of deployments without one, and changes it when one is named', () => {
    const before = deploymentSpec();
    // The hash of this spec before the field existed (computed on the previous commit).
    expect(templateHash(before, before.roles[0]!)).toBe('149bc26ed84e737e');
    expect(templateHash({ ...before, artifact: 'llama' }, before.roles[0]!)).not.toBe(templateHash(before, before.roles[0]!));
  });
});

describe('weightsReadyCondition', () => {
  const now = new Date('2026-12-01T20:00:00Z');
  const row = (state: string, message: string, ordinal = 0) => ({ role: 'server', ordinal, node: 'h100-0', state, message });

  it('is False while a replica’s node downloads, with its progress', () => {
    const c = weightsReadyCondition(undefined, 'llama', [row('Ready', ''), row('Starting', '0/1 pods ready: WEIGHTS_PENDING: waiting for weights: Downloading 45% (artifact team-a/llama)', 1)], now);
    expect(c).toMatchObject({ type: 'WeightsReady', status: false, reason: 'Downloading', message: 'server 1 on h100-0: waiting for weights: Downloading 45% (artifact team-a/llama)' });
  });

  it('is False with the copy’s reason when a node could not fetch it, before any download in progress', () => {
    const c = weightsReadyCondition(undefined, 'llama', [row('Starting', '0/1 pods ready: WEIGHTS_PENDING: waiting for weights: Downloading 5%'), row('Failed', 'WEIGHTS_FAILED: artifact team-a/llama could not be fetched to this node: InsufficientCapacity', 1)], now);
    expect(c).toMatchObject({ status: false, reason: 'FetchFailed', message: 'server 1 on h100-0: artifact team-a/llama could not be fetched to this node: InsufficientCapacity' });
  });

  it('turns True once no replica waits, keeping the time of its last transition while it stays so', () => {
    const first = weightsReadyCondition(undefined, 'llama', [row('Ready', ''), row('Terminating', 'WEIGHTS_PENDING: waiting for weights: Downloading 1%', 1)], now);
    expect(first).toMatchObject({ status: true, reason: 'Ready' });
    const later = weightsReadyCondition([first], 'llama', [row('Ready', '')], new Date(now.getTime() + 60_000));
    expect(later.lastTransition).toEqual(now);
  });
});
