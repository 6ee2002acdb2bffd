import { resourcesOf, resourceName, socketNameOf, type DevicePluginSettings } from './resources';
import { a100Mig, amdNode, ascendNode, dgx1 } from './__fixtures__/nodes';

const ALL: DevicePluginSettings = { modes: ['whole', 'shared', 'slice'], sharedReplicas: 4, slicesPerCard: 2 };

describe('resources of a node', () => {
  it('offers whole NVIDIA cards as gpufleet.io/nvidia-gpu by default, one device per card UUID with its NUMA node', () => {
    const [gpu, ...rest] = resourcesOf(dgx1());
    expect(rest).toEqual([]);
    expect(gpu.name).toBe('gpufleet.io/nvidia-gpu');
    expect(gpu.mode).toBe('whole');
    expect(gpu.devices.map((d) => d.id)).toEqual(Array.from({ length: 8 }, (_, i) => `GPU-v100-${i}`));
    expect(gpu.devices[5].card.numaNode).toBe(1);
  });

  it('offers shared replicas and slices as <uuid>::<k> under their own names', () => {
    const resources = resourcesOf(dgx1(), ALL);
    expect(resources.map((r) => r.name)).toEqual(['gpufleet.io/nvidia-gpu', 'gpufleet.io/nvidia-gpu-shared', 'gpufleet.io/nvidia-gpu-slice']);
    expect(resources[1].devices.slice(0, 5).map((d) => d.id)).toEqual(['GPU-v100-0::0', 'GPU-v100-0::1', 'GPU-v100-0::2', 'GPU-v100-0::3', 'GPU-v100-1::0']);
    expect(resources[1].devices).toHaveLength(32);
    expect(resources[2].devices).toHaveLength(16);
    expect(resources[2].unitsPerCard).toBe(2);
  });

  it('offers MIG partitions per profile ("+me" written ".me") and keeps MIG cards out of the other modes', () => {
    const resources = resourcesOf(a100Mig(), ALL);
    const names = resources.map((r) => r.name);
    expect(names).toContain('gpufleet.io/nvidia-mig-1g.10gb');
    expect(names).toContain('gpufleet.io/nvidia-mig-3g.40gb');
    expect(names).toContain('gpufleet.io/nvidia-mig-1g.10gb.me');
    const mig = resources.find((r) => r.name === 'gpufleet.io/nvidia-mig-1g.10gb');
    expect(mig?.devices.map((d) => d.id)).toEqual(['MIG-aaaa-1', 'MIG-aaaa-2']);
    const whole = resources.find((r) => r.name === 'gpufleet.io/nvidia-gpu');
    expect(whole?.devices.map((d) => d.id)).toEqual(['GPU-a100-1', 'GPU-a100-2', 'GPU-a100-3']);
  });

  it('names AMD and Ascend resources after their vendor; an Ascend NPU without UUID goes by its accelerator id', () => {
    expect(resourcesOf(amdNode()).map((r) => r.name)).toEqual(['gpufleet.io/amd-gpu']);
    const [npu] = resourcesOf(ascendNode(), { ...ALL, modes: ['whole', 'shared'] });
    expect(npu.name).toBe('gpufleet.io/ascend-npu');
    expect(npu.devices.map((d) => d.id)).toEqual(['ascend-0', 'ascend-1']);
  });

  it('names every resource validly for the kubelet, and its socket after it', () => {
    for (const r of [...resourcesOf(a100Mig(), ALL), ...resourcesOf(amdNode(), ALL), ...resourcesOf(ascendNode(), ALL)]) {
      expect(r.name).toMatch(/^gpufleet\.io\/[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$/);
      expect(r.name.length).toBeLessThanOrEqual(63 + 'gpufleet.io/'.length);
    }
    expect(socketNameOf(resourceName('nvidia', 'whole'))).toBe('gpufleet-nvidia-gpu.sock');
    expect(socketNameOf(resourceName('nvidia', 'mig', '1g.10gb'))).toBe('gpufleet-nvidia-mig-1g.10gb.sock');
  });

  it('refuses unit counts it cannot offer', () => {
    expect(() => resourcesOf(dgx1(), { ...ALL, sharedReplicas: 0 })).toThrow('INVALID_ARGUMENT: sharedReplicas must be an integer between 1 and 1000, got 0');
  });
});
