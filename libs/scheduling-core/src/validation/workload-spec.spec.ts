import { PodSet, WorkloadSpec } from '@gpufleet/contracts';
import { cpuPool, h100Pool, podSet, wholeWorkload } from '../admission/__fixtures__/workloads';
import { definePoolShape, PoolShape } from './pool-shape';
import { validateWorkloadSpec, WorkloadValidationContext } from './workload-spec';

function inPool(pool: PoolShape): WorkloadValidationContext {
  return {
    resolveLocalQueue: (namespace, localQueue) =>
      localQueue === 'main'
        ? { ok: true, clusterQueue: 'cq', pool }
        : { ok: false, expected: `an existing LocalQueue of namespace ${JSON.stringify(namespace)}`, got: JSON.stringify(localQueue) },
  };
}

const withPodSets = (...podSets: PodSet[]): WorkloadSpec => ({ ...wholeWorkload('job'), podSets });
const messages = (spec: WorkloadSpec, pool: PoolShape = h100Pool()): string[] => validateWorkloadSpec(spec, inPool(pool)).map((p) => p.message);

describe('validateWorkloadSpec', () => {
  it('accepts a well-formed workload that its pool can hold', () => {
    expect(messages(wholeWorkload('llama-70b', { whole: 8, count: 2 }))).toEqual([]);
  });

  it('names each bad name as a DNS-1123 label problem with what was given', () => {
    const problems = validateWorkloadSpec({ ...wholeWorkload('My_Job'), namespace: '' }, inPool(h100Pool()));
    expect(problems.map((p) => p.field)).toEqual(['name', 'namespace']);
    expect(problems[0].message).toMatch(/^name: expected a DNS-1123 label .*, got "My_Job"$/);
    expect(problems[1].got).toBe('an empty string');
  });

  it('reports a LocalQueue that does not exist in the namespace', () => {
    expect(messages(wholeWorkload('job', { localQueue: 'nope' }))).toEqual(['localQueue: expected an existing LocalQueue of namespace "team-a", got "nope"']);
  });

  it('requires unique pod set names, at least one replica and one pod per replica', () => {
    expect(messages(withPodSets(podSet('main', 1), { ...podSet('main', 1), count: 0, size: 0 }))).toEqual([
      'podSets[1].name: expected a name unique among the pod sets, got "main" (also podSets[0])',
      'podSets[1].count: expected an integer from 1 to 4294967295 (replicas), got 0',
      'podSets[1].size: expected an integer from 1 to 4294967295 (pods per replica), got 0',
    ]);
  });

  it('requires 1 to 8 pod sets', () => {
    expect(messages(withPodSets())).toEqual(['podSets: expected 1 to 8 pod sets, got 0']);
  });

  it('requires exactly one accelerator mode per pod', () => {
    const both = { ...podSet('main', 1), resources: { accelerator: { whole: 1, slice: { memoryPercent: 50, coresPercent: 50 } }, vcpu: 8, memoryMib: 1024 } };
    const none = { ...podSet('aux', 1), resources: { accelerator: {}, vcpu: 8, memoryMib: 1024 } };
    expect(messages(withPodSets(both, none))).toEqual([
      'podSets[0].resources.accelerator: expected exactly one of whole, sharedTokens, slice, partitionProfile, got whole and slice',
      'podSets[1].resources.accelerator: expected exactly one of whole, sharedTokens, slice, partitionProfile, got none',
    ]);
  });

  it('keeps shared tokens within one accelerator (1-10)', () => {
    const shared = { ...podSet('main', 1), resources: { accelerator: { sharedTokens: 12 }, vcpu: 4, memoryMib: 1024 } };
    expect(messages(withPodSets(shared))).toEqual(['podSets[0].resources.accelerator.sharedTokens: expected an integer from 1 to 10 (10 tokens are one accelerator), got 12']);
  });

  it('requires a slice to have exactly one memory budget and cores within 1-100', () => {
    const slice = (s: object, name: string) => ({ ...podSet(name, 1), resources: { accelerator: { slice: { coresPercent: 50, ...s } }, vcpu: 4, memoryMib: 1024 } });
    expect(
      messages(
        withPodSets(
          slice({ memoryMib: 1000, memoryPercent: 10 }, 'a'),
          slice({}, 'b'),
          slice({ memoryMib: 90_000 }, 'c'),
          slice({ memoryPercent: 25, coresPercent: 0 }, 'd'),
        ),
      ),
    ).toEqual([
      'podSets[0].resources.accelerator.slice: expected exactly one memory budget (memoryMib or memoryPercent), got both',
      'podSets[1].resources.accelerator.slice: expected exactly one memory budget (memoryMib or memoryPercent), got neither',
      'podSets[2].resources.accelerator.slice.memoryMib: expected an integer from 1 to 81559 (MiB; one accelerator of pool h100 has 81,559 MiB), got 90000',
      'podSets[3].resources.accelerator.slice.coresPercent: expected an integer from 1 to 100 (percent of one accelerator), got 0',
    ]);
  });

  it('accepts only MIG profiles the pool offers, on MIG-enabled accelerators', () => {
    const mig = (profile: string) => ({ ...podSet('main', 1), resources: { accelerator: { partitionProfile: profile }, vcpu: 4, memoryMib: 1024 } });
    const migPool = h100Pool('h100', 2, { accelerators: 4, migAccelerators: 4 });
    expect(messages(withPodSets(mig('3g.40gb')), migPool)).toEqual([]);
    expect(messages(withPodSets(mig('3g.20gb')), migPool)).toEqual([
      'podSets[0].resources.accelerator.partitionProfile: expected a MIG profile pool h100 offers (1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb), got "3g.20gb"',
    ]);
    expect(messages(withPodSets(mig('3g.40gb')), h100Pool())[0]).toMatch(/partitionProfile: expected a pool with MIG-enabled accelerators \(none of the 32 accelerators/);
    // 2 nodes × 4 MIG GPUs × 2 instances of 3g.40gb each = 16
    expect(messages(withPodSets({ ...mig('3g.40gb'), count: 17 }), migPool)).toEqual([
      'podSets: expected at most 16 partitions of 3g.40gb in total (8 MIG-enabled accelerators of pool h100, 2 each), got 17 pods',
    ]);
  });

  it('keeps whole accelerators per pod within the largest node', () => {
    expect(messages(wholeWorkload('big', { whole: 16 }))).toEqual([
      'podSets[0].resources.accelerator.whole: expected an integer from 1 to 8 (the largest node of pool h100 has 8 accelerators), got 16',
    ]);
  });

  it('checks that the pool has enough accelerators in total for the workload', () => {
    expect(messages(wholeWorkload('big', { whole: 8, count: 5 }))).toEqual([
      'podSets: expected at most 32 accelerators in total (all nodes of pool h100, MIG-enabled ones excluded), got 40 (40 whole)',
    ]);
  });

  it('refuses a multi-node replica whose gang no set of the pool’s nodes can hold, with the numbers', () => {
    const gang = (size: number, whole: number) => withPodSets({ ...podSet('main', whole), count: 1, size, resources: { accelerator: { whole }, vcpu: 8, memoryMib: 1024 } });
    expect(messages(gang(4, 8))).toEqual([]);
    expect(messages(gang(5, 6))).toEqual([
      'podSets[0].size: expected at most 4 pods of 6 whole accelerators in one replica (its pods are placed together: the 4 nodes of pool h100 hold 4 such pods), got 5 (30 accelerators)',
    ]);
    expect(messages(gang(8, 4))).toEqual([]);
  });

  it('keeps vCPU and memory within the largest node, and a pod on one node', () => {
    const pod = (vcpu: number, memoryMib: number) => ({ ...podSet('main', 8), resources: { accelerator: { whole: 8 }, vcpu, memoryMib } });
    expect(messages(withPodSets(pod(300, 1024)))).toEqual([
      'podSets[0].resources.vcpu: expected an integer from 0 to 224 (the largest node of pool h100 has 224 vCPU), got 300',
    ]);
    const mixed = definePoolShape({
      name: 'mixed',
      acceleratorProduct: 'NVIDIA H100 80GB HBM3',
      acceleratorMemoryMib: 81_559,
      nodeShapes: [
        { accelerators: 8, migAccelerators: 0, vcpu: 64, memoryMib: 1_000_000, nodes: 1 },
        { accelerators: 4, migAccelerators: 0, vcpu: 224, memoryMib: 1_000_000, nodes: 1 },
      ],
    });
    expect(messages(withPodSets(pod(128, 1024)), mixed)).toEqual([
      'podSets[0].resources: expected a pod one node of pool mixed can hold (nodes: 8 accelerators, 64 vCPU, 1,000,000 MiB; 4 accelerators, 224 vCPU, 1,000,000 MiB), got 8 accelerators, 128 vCPU, 1,024 MiB',
    ]);
  });

  it('asks CPU for CPU-only pods and refuses accelerators in a CPU pool', () => {
    const cpuOnly = { ...podSet('main', 1), resources: { accelerator: undefined, vcpu: 0, memoryMib: 1024 } };
    expect(messages(withPodSets(cpuOnly), cpuPool())).toEqual(['podSets[0].resources.vcpu: expected an integer from 1 to 64 (a pod without accelerators needs CPU; the largest node of pool cpu has 64 vCPU), got 0']);
    expect(messages(wholeWorkload('gpu'), cpuPool())).toEqual(['podSets[0].resources.accelerator: expected no accelerator (pool cpu is CPU-only), got whole']);
  });

  it('accepts topology levels node|nvlink-domain|rack|zone with preferred no wider than required', () => {
    const topo = (requiredLevel: string, preferredLevel: string) => ({ ...podSet('main', 1, 1, 2), topology: { requiredLevel, preferredLevel } });
    expect(messages(withPodSets(topo('rack', 'node')))).toEqual([]);
    expect(messages(withPodSets(topo('host', '')))).toEqual(['podSets[0].topology.requiredLevel: expected one of node, nvlink-domain, rack, zone (or empty), got "host"']);
    expect(messages(withPodSets(topo('node', 'rack')))).toEqual([
      'podSets[0].topology.preferredLevel: expected a level no wider than requiredLevel "node" (narrowest first: node, nvlink-domain, rack, zone), got "rack"',
    ]);
  });
});
