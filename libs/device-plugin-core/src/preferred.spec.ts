import { DevicePluginState } from './plugin-state';
import { node } from '@gpufleet/testing';
import { dgx1 } from './__fixtures__/nodes';

const GPU = 'gpufleet.io/nvidia-gpu';
const ids = (...n: number[]) => n.map((i) => `GPU-v100-${i}`);

function state(modes: ('whole' | 'shared' | 'slice')[] = ['whole']) {
  const s = new DevicePluginState({ settings: { modes, sharedReplicas: 4, slicesPerCard: 4 } });
  s.update(dgx1());
  return s;
}

describe('preferred allocation on an 8×V100 DGX-1 (hybrid cube mesh)', () => {
  const all = ids(0, 1, 2, 3, 4, 5, 6, 7);

  it('picks a pair joined by two NVLinks within one NUMA node', () => {
    expect(state().preferred(GPU, { availableDeviceIDs: all, mustIncludeDeviceIDs: [], allocationSize: 2 })).toEqual(ids(0, 3));
  });

  it('picks a fully NVLinked quad, never one that crosses SYS', () => {
    expect(state().preferred(GPU, { availableDeviceIDs: all, mustIncludeDeviceIDs: [], allocationSize: 4 })).toEqual(ids(0, 1, 2, 3));
    expect(state().preferred(GPU, { availableDeviceIDs: ids(0, 2, 4, 5, 6, 7), mustIncludeDeviceIDs: [], allocationSize: 4 })).toEqual(ids(4, 5, 6, 7));
  });

  it('honours must_include_deviceIDs and picks their NVLink-nearest partners', () => {
    expect(state().preferred(GPU, { availableDeviceIDs: all, mustIncludeDeviceIDs: ids(4), allocationSize: 2 })).toEqual(ids(4, 7));
    const three = state().preferred(GPU, { availableDeviceIDs: all, mustIncludeDeviceIDs: ids(1), allocationSize: 3 });
    expect(three[0]).toBe('GPU-v100-1');
    expect(three.slice(1)).toEqual(ids(2, 3));
  });

  it('chooses among the available devices only', () => {
    expect(state().preferred(GPU, { availableDeviceIDs: ids(1, 4, 5, 6), mustIncludeDeviceIDs: [], allocationSize: 2 })).toEqual(ids(5, 6));
  });

  it('puts shared units on one card, the one that fits them most tightly', () => {
    const s = state(['shared']);
    const available = ['GPU-v100-0::0', 'GPU-v100-0::1', 'GPU-v100-0::2', 'GPU-v100-0::3', 'GPU-v100-1::2', 'GPU-v100-1::3', 'GPU-v100-2::3'];
    expect(s.preferred('gpufleet.io/nvidia-gpu-shared', { availableDeviceIDs: available, mustIncludeDeviceIDs: [], allocationSize: 2 })).toEqual([
      'GPU-v100-1::2',
      'GPU-v100-1::3',
    ]);
    expect(s.preferred('gpufleet.io/nvidia-gpu-shared', { availableDeviceIDs: available, mustIncludeDeviceIDs: ['GPU-v100-0::1'], allocationSize: 2 })).toEqual([
      'GPU-v100-0::1',
      'GPU-v100-0::0',
    ]);
  });

  it('refuses unknown device ids and sizes that cannot be met', () => {
    expect(() => state().preferred(GPU, { availableDeviceIDs: ['GPU-nope'], mustIncludeDeviceIDs: [], allocationSize: 1 })).toThrow(
      'UNKNOWN_DEVICE: gpufleet.io/nvidia-gpu has no device "GPU-nope"',
    );
    expect(() => state().preferred(GPU, { availableDeviceIDs: ids(0), mustIncludeDeviceIDs: [], allocationSize: 2 })).toThrow('INVALID_ARGUMENT: allocation_size 2');
  });

  it('answers quickly where the exact search would not (greedy from the best seed)', () => {
    const s = new DevicePluginState();
    s.update(node('big-0', { gpus: 32 }));
    const began = Date.now();
    const chosen = s.preferred(GPU, { availableDeviceIDs: Array.from({ length: 32 }, (_, i) => `GPU-${i}`), mustIncludeDeviceIDs: ['GPU-9'], allocationSize: 8 });
    expect(chosen).toHaveLength(8);
    expect(new Set(chosen).size).toBe(8);
    expect(chosen[0]).toBe('GPU-9');
    expect(Date.now() - began).toBeLessThan(1000);
  });
});
