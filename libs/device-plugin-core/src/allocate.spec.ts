import { DevicePluginState } from './plugin-state';
import { defaultMigMinor, parseMigMinors } from './mig-minors';
import { a100Mig, amdNode, ascendNode, dgx1 } from './__fixtures__/nodes';

const settings = { modes: ['whole', 'shared', 'slice'] as const, sharedReplicas: 4, slicesPerCard: 4 };

function stateOf(inventory: ReturnType<typeof dgx1>, options: ConstructorParameters<typeof DevicePluginState>[0] = {}) {
  const s = new DevicePluginState({ settings: { ...settings, modes: [...settings.modes] }, ...options });
  s.update(inventory);
  return s;
}

const paths = (r: { devices: { hostPath: string }[] }) => r.devices.map((d) => d.hostPath);

describe('Allocate', () => {
  it('whole NVIDIA cards: UUIDs in CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES, their device nodes and the control nodes', () => {
    const r = stateOf(dgx1()).allocate('gpufleet.io/nvidia-gpu', ['GPU-v100-3', 'GPU-v100-0']);
    expect(r.envs).toEqual({ CUDA_VISIBLE_DEVICES: 'GPU-v100-0,GPU-v100-3', NVIDIA_VISIBLE_DEVICES: 'GPU-v100-0,GPU-v100-3', CUDA_DEVICE_ORDER: 'PCI_BUS_ID' });
    expect(paths(r)).toEqual(['/dev/nvidiactl', '/dev/nvidia-uvm', '/dev/nvidia-uvm-tools', '/dev/nvidia0', '/dev/nvidia3']);
    expect(r.devices.every((d) => d.permissions === 'rw' && d.containerPath === d.hostPath)).toBe(true);
    expect(r.annotations).toEqual({ 'gpufleet.io/nvidia-gpu.devices': 'GPU-v100-3,GPU-v100-0', 'gpufleet.io/accelerators': 'GPU-v100-0,GPU-v100-3' });
    expect(r.mounts).toEqual([]);
  });

  it('shared units: the one card, and the tokens taken', () => {
    const r = stateOf(dgx1()).allocate('gpufleet.io/nvidia-gpu-shared', ['GPU-v100-5::0', 'GPU-v100-5::2']);
    expect(r.envs).toMatchObject({ CUDA_VISIBLE_DEVICES: 'GPU-v100-5', GPUFLEET_SHARED_TOKENS: '2' });
    expect(paths(r)).toContain('/dev/nvidia5');
    expect(r.annotations['gpufleet.io/shared-tokens']).toBe('2/4');
  });

  it('slices: the card with memory and compute limits for its share', () => {
    const r = stateOf(dgx1()).allocate('gpufleet.io/nvidia-gpu-slice', ['GPU-v100-2::1']);
    expect(r.envs).toMatchObject({
      CUDA_VISIBLE_DEVICES: 'GPU-v100-2',
      GPUFLEET_MEMORY_LIMIT_MIB: '8192',
      GPUFLEET_CORES_PERCENT: '25',
      CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: '0=8192M',
      CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: '25',
    });
  });

  it('refuses shared or slice units spread over two cards', () => {
    expect(() => stateOf(dgx1()).allocate('gpufleet.io/nvidia-gpu-shared', ['GPU-v100-0::0', 'GPU-v100-1::0'])).toThrow(
      'INVALID_ARGUMENT: gpufleet.io/nvidia-gpu-shared units of one container must be on one card, got units of GPU-v100-0 and GPU-v100-1',
    );
  });

  it('MIG: the partition UUID, the parent card and its capability nodes from mig-minors', () => {
    const minors = parseMigMinors('config 1\nmonitor 2\ngpu0/gi9/access 84\ngpu0/gi9/ci0/access 85\n');
    const r = stateOf(a100Mig(), { allocate: { migMinors: minors } }).allocate('gpufleet.io/nvidia-mig-1g.10gb', ['MIG-aaaa-1']);
    expect(r.envs).toEqual({ CUDA_VISIBLE_DEVICES: 'MIG-aaaa-1', NVIDIA_VISIBLE_DEVICES: 'MIG-aaaa-1' });
    expect(paths(r)).toEqual([
      '/dev/nvidiactl',
      '/dev/nvidia-uvm',
      '/dev/nvidia-uvm-tools',
      '/dev/nvidia0',
      '/dev/nvidia-caps/nvidia-cap84',
      '/dev/nvidia-caps/nvidia-cap85',
    ]);
    expect(r.annotations['gpufleet.io/mig-profile']).toBe('1g.10gb');
  });

  it('MIG without a mig-minors file: the driver default layout', () => {
    expect(defaultMigMinor(0, 0)).toBe(3);
    expect(defaultMigMinor(0, 0, 0)).toBe(4);
    expect(defaultMigMinor(0, 1)).toBe(12);
    expect(defaultMigMinor(1, 0)).toBe(138);
    const r = stateOf(a100Mig()).allocate('gpufleet.io/nvidia-mig-3g.40gb', ['MIG-aaaa-3']);
    expect(paths(r)).toEqual(expect.arrayContaining(['/dev/nvidia-caps/nvidia-cap21', '/dev/nvidia-caps/nvidia-cap22']));
  });

  it('MIG: refuses two partitions for one container (CUDA enumerates one)', () => {
    expect(() => stateOf(a100Mig()).allocate('gpufleet.io/nvidia-mig-1g.10gb', ['MIG-aaaa-1', 'MIG-aaaa-2'])).toThrow('INVALID_ARGUMENT: a process can use one MIG partition only');
  });

  it('AMD: ROCR_VISIBLE_DEVICES by UUID, HIP_VISIBLE_DEVICES counted within them, /dev/kfd and the DRI nodes', () => {
    const r = stateOf(amdNode()).allocate('gpufleet.io/amd-gpu', ['GPU-a1b2c3d4e5f60701']);
    expect(r.envs).toEqual({ ROCR_VISIBLE_DEVICES: 'GPU-a1b2c3d4e5f60701', HIP_VISIBLE_DEVICES: '0' });
    expect(paths(r)).toEqual(['/dev/kfd', '/dev/dri/card1', '/dev/dri/renderD129']);
  });

  it('Ascend: ASCEND_RT_VISIBLE_DEVICES and ASCEND_VISIBLE_DEVICES, /dev/davinci<N>, the manager nodes and the driver mount', () => {
    const r = stateOf(ascendNode()).allocate('gpufleet.io/ascend-npu', ['ascend-1', 'ascend-0']);
    expect(r.envs).toEqual({ ASCEND_RT_VISIBLE_DEVICES: '0,1', ASCEND_VISIBLE_DEVICES: '0,1' });
    expect(paths(r)).toEqual(['/dev/davinci_manager', '/dev/devmm_svm', '/dev/hisi_hdc', '/dev/davinci0', '/dev/davinci1']);
    expect(r.mounts).toEqual([
      { containerPath: '/usr/local/Ascend/driver', hostPath: '/usr/local/Ascend/driver', readOnly: true },
      { containerPath: '/usr/local/sbin/npu-smi', hostPath: '/usr/local/sbin/npu-smi', readOnly: true },
    ]);
  });

  it('refuses unknown device ids, naming them, and unknown resources, naming what the node offers', () => {
    expect(() => stateOf(dgx1()).allocate('gpufleet.io/nvidia-gpu', ['GPU-v100-0', 'GPU-gone'])).toThrow('UNKNOWN_DEVICE: gpufleet.io/nvidia-gpu has no device "GPU-gone"');
    expect(() => stateOf(dgx1()).allocate('gpufleet.io/amd-gpu', ['x'])).toThrow(
      'UNKNOWN_RESOURCE: this node offers no gpufleet.io/amd-gpu; it offers gpufleet.io/nvidia-gpu, gpufleet.io/nvidia-gpu-shared, gpufleet.io/nvidia-gpu-slice',
    );
    expect(() => stateOf(dgx1()).allocate('gpufleet.io/nvidia-gpu', [])).toThrow('INVALID_ARGUMENT');
  });

  it('refuses a mig-minors line it cannot read, naming it', () => {
    expect(() => parseMigMinors('config 1\ngpu0/gi1/access twelve\n')).toThrow('mig-minors line 2 is not "<capability> <minor>": "gpu0/gi1/access twelve"');
  });
});
