import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseNvidiaGpuList } from './gpu-list';

const fixture = (name: string): string => readFileSync(join(__dirname, '__fixtures__', name), 'utf8');

describe('parseNvidiaGpuList', () => {
  it('MIG enabled A100 lists its 1g.10gb partitions', () => {
    const [gpu] = parseNvidiaGpuList(fixture('gpu-list-a100-mig-7x1g10gb.txt'));

    expect(gpu.index).toBe(0);
    expect(gpu.product).toBe('NVIDIA A100-SXM4-80GB');
    expect(gpu.uuid).toBe('GPU-7fdaf0a5-179b-f636-d15d-daf243e3ff16');
    expect(gpu.migDevices).toHaveLength(7);
    expect(gpu.migDevices[0]).toEqual({
      uuid: 'MIG-feb88891-0321-5fef-9c87-d4af3b54259e',
      profile: '1g.10gb',
      index: 0,
      memoryMib: 10240,
    });
    expect(gpu.migDevices.map((mig) => mig.index)).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('MIG devices attach to the GPU they are listed under, not to the next ones', () => {
    const gpus = parseNvidiaGpuList(fixture('gpu-list-4xa100-mig-on-gpu0.txt'));

    expect(gpus.map((gpu) => gpu.migDevices.length)).toEqual([4, 0, 0, 0]);
    expect(gpus[0].migDevices.every((mig) => mig.profile === '1g.20gb' && mig.memoryMib === 20480)).toBe(true);
    expect(gpus[3].uuid).toBe('GPU-69ec2344-ebac-b028-f88f-452abb3d7f11');
  });

  it('A100 PCIe split in two 3g.40gb halves', () => {
    const [gpu] = parseNvidiaGpuList(fixture('gpu-list-a100-pcie-2x3g40gb.txt'));

    expect(gpu.migDevices.map((mig) => [mig.profile, mig.index, mig.memoryMib])).toEqual([
      ['3g.40gb', 0, 40960],
      ['3g.40gb', 1, 40960],
    ]);
  });

  it('pre-R470 MIG UUIDs yield the GPU and compute instance ids', () => {
    const text = [
      'GPU 0: A100-SXM4-40GB (UUID: GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3f)',
      '  MIG 3g.20gb Device 0: (UUID: MIG-GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3f/1/0)',
    ].join('\n');

    expect(parseNvidiaGpuList(text)[0].migDevices[0]).toEqual({
      uuid: 'MIG-GPU-5c89852c-d268-c3f3-1b07-005d5ae1dc3f/1/0',
      profile: '3g.20gb',
      index: 0,
      gpuInstanceId: 1,
      computeInstanceId: 0,
      memoryMib: 20480,
    });
  });

  it('"No devices were found" is an empty list', () => {
    expect(parseNvidiaGpuList(fixture('no-devices-were-found.txt'))).toEqual([]);
  });

  it('garbage output throws with the line number', () => {
    const text = ['GPU 0: Tesla T4 (UUID: GPU-1)', 'NVIDIA-SMI has failed because it could not communicate'].join('\n');

    expect(() => parseNvidiaGpuList(text)).toThrow(/nvidia-smi -L: line 2: expected a "GPU n: \.\.\."/);
  });

  it('a MIG line with no GPU above it throws', () => {
    expect(() => parseNvidiaGpuList('  MIG 1g.10gb     Device  0: (UUID: MIG-1)')).toThrow(
      /line 1: MIG device listed before any GPU/,
    );
  });
});
