import type { V1Node } from '@kubernetes/client-node';
import { joinNodes, nodeStateOf, tolerates } from './nodes';

function node(name: string, overrides: { unschedulable?: boolean; ready?: 'True' | 'False' | 'Unknown'; taints?: NonNullable<V1Node['spec']>['taints']; labels?: Record<string, string> } = {}): V1Node {
  return {
    metadata: { name, labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/arch': 'amd64', 'kubernetes.io/os': 'linux', ...overrides.labels } },
    spec: { unschedulable: overrides.unschedulable, taints: overrides.taints },
    status: {
      conditions: [{ type: 'Ready', status: overrides.ready ?? 'True', reason: overrides.ready === 'False' ? 'KubeletNotReady' : 'KubeletReady', message: overrides.ready === 'False' ? 'container runtime is down' : '' }],
      allocatable: { cpu: '96', memory: '1Ti', 'gpufleet.io/nvidia-gpu': '8', 'gpufleet.io/nvidia-mig-3g.40gb': '2', 'nvidia.com/gpu': '8' },
      addresses: [{ type: 'InternalIP', address: '10.0.0.5' }],
    },
  };
}

describe('nodeStateOf', () => {
  it('is schedulable when Ready, not cordoned and without untolerated taints', () => {
    const s = nodeStateOf(node('h100-0', { labels: { 'gpufleet.io/zone': 'us-east-1a', 'gpufleet.io/rack': 'r7', 'gpufleet.io/nvlink-domain': 'nvl-1' }, taints: [{ key: 'nvidia.com/gpu', effect: 'NoSchedule' }] }));
    expect(s).toMatchObject({ name: 'h100-0', schedulable: true, ready: true, cordoned: false, reasons: [], arch: 'amd64', os: 'linux', internalIP: '10.0.0.5' });
    expect(s.topology).toEqual({ zone: 'us-east-1a', rack: 'r7', nvlinkDomain: 'nvl-1' });
    expect(s.deviceAllocatable).toEqual({ 'gpufleet.io/nvidia-gpu': 8, 'gpufleet.io/nvidia-mig-3g.40gb': 2 });
  });

  it('is not schedulable when cordoned, NotReady or tainted NoSchedule/NoExecute, and says why', () => {
    expect(nodeStateOf(node('a', { unschedulable: true })).reasons).toEqual(['cordoned (spec.unschedulable): uncordon it with `kubectl uncordon a`']);
    expect(nodeStateOf(node('b', { ready: 'False' })).reasons).toEqual(['NotReady (KubeletNotReady: container runtime is down)']);
    const tainted = nodeStateOf(node('c', { taints: [{ key: 'maintenance', value: 'true', effect: 'NoExecute' }, { key: 'soft', effect: 'PreferNoSchedule' }] }));
    expect(tainted.schedulable).toBe(false);
    expect(tainted.reasons).toEqual(["taint maintenance=true:NoExecute is not tolerated by gpufleet's pods"]);
  });

  it('falls back to the well-known zone label', () => {
    expect(nodeStateOf(node('d', { labels: { 'topology.kubernetes.io/zone': 'z1', 'topology.kubernetes.io/region': 'r1' } })).topology).toEqual({ zone: 'z1', region: 'r1' });
  });

  it('matches tolerations as Kubernetes does', () => {
    expect(tolerates({ operator: 'Exists' }, { key: 'x', effect: 'NoSchedule' })).toBe(true);
    expect(tolerates({ key: 'x', operator: 'Equal', value: 'a', effect: 'NoSchedule' }, { key: 'x', value: 'b', effect: 'NoSchedule' })).toBe(false);
    expect(tolerates({ key: 'x', value: 'a' }, { key: 'x', value: 'a', effect: 'NoExecute' })).toBe(true);
    expect(tolerates({ key: 'x', operator: 'Exists', effect: 'NoSchedule' }, { key: 'x', effect: 'NoExecute' })).toBe(false);
  });
});

describe('joinNodes', () => {
  it('joins agents with Nodes by name, then by hostname label, and lists what is on one side only', () => {
    const agents = [{ nodeName: 'h100-0' }, { nodeName: 'h100-1' }, { nodeName: 'lonely' }];
    const nodes = [node('h100-0'), node('h100-1.cluster.local', { labels: { 'kubernetes.io/hostname': 'h100-1' } }), node('cpu-0')];
    const join = joinNodes(agents, (a) => a.nodeName, nodes);
    expect(join.joined.map((j) => [j.name, j.kube.name])).toEqual([
      ['h100-0', 'h100-0'],
      ['h100-1', 'h100-1.cluster.local'],
    ]);
    expect(join.agentOnly).toEqual([{ nodeName: 'lonely' }]);
    expect(join.kubeOnly.map((n) => n.name)).toEqual(['cpu-0']);
  });
});
