import { ArtifactPhase, ModelArtifact, Workload, WorkloadPhase } from '@gpufleet/contracts';
import { artifactsInUse, wantedCopies } from './demand';

function artifact(name: string, prefetch: string[] = [], phase = ArtifactPhase.ARTIFACT_PHASE_READY): [string, ModelArtifact] {
  return [`team-a.${name}`, ModelArtifact.fromPartial({ spec: { name, namespace: 'team-a', prefetch }, status: { phase, manifestDigest: `sha256:${name}` } })];
}

function workload(name: string, opts: { artifact?: string; nodes?: string[]; phase?: WorkloadPhase; namespace?: string }): Workload {
  return Workload.fromPartial({
    spec: { name, namespace: opts.namespace ?? 'team-a', template: { engine: { deployment: name, artifact: opts.artifact ?? '' } } },
    status: { phase: opts.phase ?? WorkloadPhase.WORKLOAD_PHASE_ADMITTED, placements: (opts.nodes ?? []).map((node) => ({ node, podSet: 'server' })) },
  });
}

describe('artifactsInUse', () => {
  it('names the artifacts of admitted workloads with a pod on the node, in the workload’s namespace', () => {
    const used = artifactsInUse('h100-0', [
      workload('a', { artifact: 'llama', nodes: ['h100-0'] }),
      workload('b', { artifact: 'qwen', nodes: ['h100-1', 'h100-0'], namespace: 'team-b' }),
      workload('c', { artifact: 'mistral', nodes: ['h100-1'] }),
      workload('d', { nodes: ['h100-0'] }),
    ]);
    expect([...used].sort()).toEqual(['team-a.llama', 'team-b.qwen']);
  });

  it('ignores workloads that are pending or finished: they run no pod', () => {
    expect(artifactsInUse('h100-0', [workload('a', { artifact: 'llama', nodes: ['h100-0'], phase: WorkloadPhase.WORKLOAD_PHASE_FINISHED }), workload('b', { artifact: 'qwen', phase: WorkloadPhase.WORKLOAD_PHASE_PENDING })]).size).toBe(0);
  });
});

describe('wantedCopies', () => {
  it('fetches what prefetch names and what a placed pod loads, marking only the latter in use', () => {
    const artifacts = [artifact('llama', ['h100-0']), artifact('qwen'), artifact('mistral', ['*']), artifact('gemma')];
    const wanted = wantedCopies('h100-0', artifacts, new Set(['team-a.qwen', 'team-a.mistral']));
    expect(wanted.map((w) => [w.artifact, w.inUse])).toEqual([
      ['team-a.llama', false],
      ['team-a.mistral', true],
      ['team-a.qwen', true],
    ]);
  });

  it('waits for a manifest: a pod’s artifact that is still resolving is not fetched yet, a Degraded one still is', () => {
    const artifacts = [artifact('llama', [], ArtifactPhase.ARTIFACT_PHASE_RESOLVING), artifact('qwen', [], ArtifactPhase.ARTIFACT_PHASE_DEGRADED)];
    expect(wantedCopies('h100-0', artifacts, new Set(['team-a.llama', 'team-a.qwen'])).map((w) => w.artifact)).toEqual(['team-a.qwen']);
  });
});
