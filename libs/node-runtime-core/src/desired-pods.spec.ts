import { WorkloadPhase } from '@gpufleet/contracts';
import { desiredPods } from './desired-pods';
import { engineTemplate, ledger, NODE, placement, workload, workloadMap } from './__fixtures__/cluster';

describe('desiredPods', () => {
  it('runs one pod per ledger entry of an admitted workload with a template', () => {
    const pods = desiredPods(
      NODE,
      ledger([
        { workload: 'team-a/llama', pod: placement({ acceleratorIds: ['nvidia-0'] }) },
        { workload: 'team-a/llama', pod: placement({ replica: 1, acceleratorIds: ['nvidia-1'] }) },
      ]),
      workloadMap(workload('llama', engineTemplate())),
    );
    expect(pods.map((p) => p.key)).toEqual([`${NODE}.team-a.llama.server.0.0`, `${NODE}.team-a.llama.server.1.0`]);
    expect(pods[1]).toMatchObject({
      id: 'team-a/llama/server/1/0',
      ref: { node: NODE, namespace: 'team-a', workload: 'llama', podSet: 'server', replica: 1, pod: 0 },
      placement: { acceleratorIds: ['nvidia-1'] },
    });
  });

  it('runs nothing for a workload that is gone, not admitted, finished, or only holds its devices', () => {
    const entries = ['gone', 'pending', 'finished', 'holder'].map((name) => ({ workload: `team-a/${name}`, pod: placement() }));
    const pods = desiredPods(
      NODE,
      ledger(entries),
      workloadMap(
        workload('pending', engineTemplate(), WorkloadPhase.WORKLOAD_PHASE_QUOTA_RESERVED),
        workload('finished', engineTemplate(), WorkloadPhase.WORKLOAD_PHASE_FINISHED),
        workload('holder', undefined),
      ),
    );
    expect(pods).toEqual([]);
  });

  it('runs nothing without a ledger, and a pod listed twice once', () => {
    expect(desiredPods(NODE, undefined, workloadMap(workload('llama', engineTemplate())))).toEqual([]);
    const twice = ledger([
      { workload: 'team-a/llama', pod: placement() },
      { workload: 'team-a/llama', pod: placement() },
    ]);
    expect(desiredPods(NODE, twice, workloadMap(workload('llama', engineTemplate())))).toHaveLength(1);
  });

  it('matches ledger entries ("<ns>/<name>") to workload keys ("<ns>.<name>") and ignores other shapes', () => {
    const workloads = workloadMap(workload('llama', engineTemplate()));
    expect(desiredPods(NODE, ledger([{ workload: 'team-a/llama', pod: placement() }]), workloads)).toHaveLength(1);
    for (const odd of ['team-a.llama', 'llama', 'team-a/llama/x', 'team-a/']) {
      expect(desiredPods(NODE, ledger([{ workload: odd, pod: placement() }]), workloads)).toEqual([]);
    }
  });
});
