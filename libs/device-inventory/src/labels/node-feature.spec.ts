import { isValidLabelKey, nfdAcceptsNamespace, nodeFeatureFor, nodeFeatureName, toNfdLabels } from './node-feature';

describe('NodeFeature mapping', () => {
  it('keeps vendor, gpufleet.io and feature.node.kubernetes.io labels as they are', () => {
    const { labels, dropped } = toNfdLabels({
      'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3',
      'nvidia.com/gpu.count': '8',
      'amd.com/gpu.family': 'AI',
      'huawei.com/npu.count': '8',
      'gpufleet.io/zone': 'z1',
      'feature.node.kubernetes.io/rdma.capable': 'true',
      'feature.node.kubernetes.io/kernel-version.full': '6.8.0-45-generic',
    });
    expect(dropped).toEqual([]);
    expect(Object.keys(labels)).toHaveLength(7);
    expect(labels['nvidia.com/gpu.product']).toBe('NVIDIA-H100-80GB-HBM3');
  });

  it('drops the kubernetes.io namespaces nfd-master denies, and invalid keys and values', () => {
    const { labels, dropped } = toNfdLabels({
      'kubernetes.io/arch': 'amd64',
      'kubernetes.io/os': 'linux',
      'node.kubernetes.io/npu.chip.name': '910B',
      'x.k8s.io/thing': 'a',
      'Bad_Prefix/x': 'a',
      'gpufleet.io/bad value': 'a',
      'gpufleet.io/ok': 'not ok!',
      'gpufleet.io/long': 'x'.repeat(64),
      'profile.node.kubernetes.io/p': 'yes',
      'gpufleet.io/empty': '',
    });
    expect(labels).toEqual({ 'profile.node.kubernetes.io/p': 'yes', 'gpufleet.io/empty': '' });
    expect(dropped.map((d) => d.key).sort()).toEqual(
      ['Bad_Prefix/x', 'gpufleet.io/bad value', 'gpufleet.io/long', 'gpufleet.io/ok', 'kubernetes.io/arch', 'kubernetes.io/os', 'node.kubernetes.io/npu.chip.name', 'x.k8s.io/thing'].sort(),
    );
    expect(dropped.find((d) => d.key === 'kubernetes.io/arch')?.reason).toMatch(/denies/);
  });

  it('gives unprefixed keys (NODE_LABELS such as team=infra) NFD’s own prefix', () => {
    expect(toNfdLabels({ team: 'infra' }).labels).toEqual({ 'feature.node.kubernetes.io/team': 'infra' });
  });

  it('validates label keys and namespaces', () => {
    expect(isValidLabelKey('a')).toBe(true);
    expect(isValidLabelKey('nvidia.com/gpu.compute.major')).toBe(true);
    expect(isValidLabelKey(`a/${'n'.repeat(64)}`)).toBe(false);
    expect(isValidLabelKey('/x')).toBe(false);
    expect(isValidLabelKey('a/b/c')).toBe(false);
    expect(nfdAcceptsNamespace('sub.feature.node.kubernetes.io')).toBe(true);
    expect(nfdAcceptsNamespace('kubernetes.io')).toBe(false);
    expect(nfdAcceptsNamespace('notkubernetes.io')).toBe(true);
  });

  it('builds the object: gpufleet-<node>, the node-name label, the full label set', () => {
    expect(nodeFeatureFor('gpu-1', 'gpufleet', { 'gpufleet.io/zone': 'z1' })).toEqual({
      apiVersion: 'nfd.k8s-sigs.io/v1alpha1',
      kind: 'NodeFeature',
      metadata: { name: 'gpufleet-gpu-1', namespace: 'gpufleet', labels: { 'nfd.node.kubernetes.io/node-name': 'gpu-1' } },
      spec: { labels: { 'gpufleet.io/zone': 'z1' } },
    });
  });

  it('keeps the name within 253 characters for the longest node names, distinct per node', () => {
    const a = `${'a'.repeat(245)}.x-1`;
    const b = `${'a'.repeat(245)}.x-2`;
    expect(nodeFeatureName('gpu-1')).toBe('gpufleet-gpu-1');
    expect(nodeFeatureName(a).length).toBeLessThanOrEqual(253);
    expect(nodeFeatureName(a)).toMatch(/^gpufleet-a+-[0-9a-f]{10}$/);
    expect(nodeFeatureName(a)).not.toBe(nodeFeatureName(b));
  });
});
