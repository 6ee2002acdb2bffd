import { resolvePodDevices } from './pod-devices';
import { accelerator, inventory, placement } from './__fixtures__/cluster';

describe('resolvePodDevices', () => {
  it('exposes whole NVIDIA accelerators by index, in PCI order', () => {
    const devices = resolvePodDevices(placement({ acceleratorIds: ['nvidia-2', 'nvidia-1'] }), inventory());
    expect(devices.env).toEqual({ CUDA_VISIBLE_DEVICES: '2,1', NVIDIA_VISIBLE_DEVICES: '2,1', CUDA_DEVICE_ORDER: 'PCI_BUS_ID' });
    expect(devices.engineIds).toEqual(['2', '1']);
    expect(devices.acceleratorMemoryMib).toBe(81_559);
  });

  it('gives a shared or sliced pod its one accelerator, and a slice its memory budget', () => {
    const shared = resolvePodDevices(placement({ acceleratorIds: ['nvidia-1'], sharedTokens: 5 }), inventory());
    expect(shared.env.CUDA_VISIBLE_DEVICES).toBe('1');
    const slice = resolvePodDevices(placement({ acceleratorIds: ['nvidia-2'], sliceMemoryMib: 20_480, sliceCoresPercent: 25 }), inventory());
    expect(slice.env.CUDA_VISIBLE_DEVICES).toBe('2');
    expect(slice.acceleratorMemoryMib).toBe(20_480);
  });

  it('maps a MIG partition to the inventory MIG device with that profile and start', () => {
    const devices = resolvePodDevices(placement({ partition: { acceleratorId: 'nvidia-3', profile: 'MIG 3g.40gb', start: 4 } }), inventory());
    expect(devices.env).toEqual({ CUDA_VISIBLE_DEVICES: 'MIG-11111111-2222-3333-4444-555555555555', NVIDIA_VISIBLE_DEVICES: 'MIG-11111111-2222-3333-4444-555555555555' });
    expect(devices.engineIds).toEqual(['MIG-11111111-2222-3333-4444-555555555555']);
    expect(devices.acceleratorMemoryMib).toBe(40_192);
  });

  it('refuses a MIG partition that is not carved yet, listing what the GPU has', () => {
    expect(() => resolvePodDevices(placement({ partition: { acceleratorId: 'nvidia-3', profile: '3g.40gb', start: 0 } }), inventory())).toThrow(
      'MIG_PARTITION_MISSING: MIG partition 3g.40gb at start 0 does not exist on nvidia-3 of node h100-0 (it has: 3g.40gb@4, 1g.10gb@0); the pod starts once the partition appears in the inventory',
    );
  });

  it('refuses an accelerator id the inventory does not list', () => {
    expect(() => resolvePodDevices(placement({ acceleratorIds: ['nvidia-0', 'nvidia-7'] }), inventory())).toThrow(
      'UNKNOWN_ACCELERATOR: accelerator nvidia-7 is not in the inventory of node h100-0 (it has: nvidia-0, nvidia-1, nvidia-2, nvidia-3)',
    );
  });

  it('uses ROCr and HIP variables on AMD, logical ids on Ascend', () => {
    const amd = inventory({ accelerators: [accelerator('amd', 0), accelerator('amd', 1), accelerator('amd', 2)] });
    expect(resolvePodDevices(placement({ acceleratorIds: ['amd-1', 'amd-2'] }), amd).env).toEqual({ ROCR_VISIBLE_DEVICES: '1,2', HIP_VISIBLE_DEVICES: '0,1' });
    const ascend = inventory({ accelerators: [accelerator('ascend', 0), accelerator('ascend', 5)] });
    expect(resolvePodDevices(placement({ acceleratorIds: ['ascend-5', 'ascend-0'] }), ascend).env).toEqual({ ASCEND_RT_VISIBLE_DEVICES: '0,5' });
  });

  it('refuses a pod that mixes vendors', () => {
    const mixed = inventory({ accelerators: [accelerator('nvidia', 0), accelerator('amd', 0)] });
    expect(() => resolvePodDevices(placement({ acceleratorIds: ['nvidia-0', 'amd-0'] }), mixed)).toThrow(/INVALID_DEVICES: pod holds accelerators of several vendors \(nvidia, amd\)/);
  });

  it('hides every device from a CPU-only pod', () => {
    const devices = resolvePodDevices(placement({ vcpu: 4 }), inventory());
    expect(devices.allocation).toBeUndefined();
    expect(devices.env).toEqual({ CUDA_VISIBLE_DEVICES: '', NVIDIA_VISIBLE_DEVICES: 'none', ROCR_VISIBLE_DEVICES: '', HIP_VISIBLE_DEVICES: '', ASCEND_RT_VISIBLE_DEVICES: '' });
    expect(devices.engineIds).toEqual([]);
  });
});
