import { AcceleratorVendor } from '@gpufleet/contracts';
import { DEVICE_VISIBILITY_VARS, devicesEnv, noDevicesEnv, withDevicesEnv } from './devices-env';

const H100 = [
  { index: 2, uuid: 'GPU-8932f937-d72c-4106-c12f-20bd9faed9f6' },
  { index: 3, uuid: 'GPU-1b2c3d4e-0000-1111-2222-333344445555' },
];

describe('devicesEnv', () => {
  describe('NVIDIA', () => {
    it('lists whole GPUs by nvidia-smi index and pins CUDA to PCI order so the indexes agree', () => {
      expect(devicesEnv({ vendor: 'nvidia', accelerators: H100 })).toEqual({
        CUDA_VISIBLE_DEVICES: '2,3',
        NVIDIA_VISIBLE_DEVICES: '2,3',
        CUDA_DEVICE_ORDER: 'PCI_BUS_ID',
      });
    });

    it('lists GPUs by UUID when asked', () => {
      const env = devicesEnv({ vendor: 'nvidia', accelerators: H100 }, { identifyBy: 'uuid' });
      expect(env.CUDA_VISIBLE_DEVICES).toBe(`${H100[0].uuid},${H100[1].uuid}`);
      expect(env.NVIDIA_VISIBLE_DEVICES).toBe(env.CUDA_VISIBLE_DEVICES);
    });

    it('keeps the order the scheduler chose (CUDA enumerates in the listed order)', () => {
      expect(devicesEnv({ vendor: 'nvidia', accelerators: [{ index: 5 }, { index: 1 }] }).CUDA_VISIBLE_DEVICES).toBe('5,1');
    });

    it('accepts the contracts vendor enum', () => {
      expect(devicesEnv({ vendor: AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA, accelerators: [{ index: 0 }] }).CUDA_VISIBLE_DEVICES).toBe('0');
    });

    it('exposes a MIG partition by its UUID', () => {
      expect(devicesEnv({ vendor: 'nvidia', migDevices: ['MIG-d9a47cfb-d1f2-d08c-b40e-0812b597ae69'] })).toEqual({
        CUDA_VISIBLE_DEVICES: 'MIG-d9a47cfb-d1f2-d08c-b40e-0812b597ae69',
        NVIDIA_VISIBLE_DEVICES: 'MIG-d9a47cfb-d1f2-d08c-b40e-0812b597ae69',
      });
    });

    it('accepts the older MIG-GPU-<uuid>/<gi>/<ci> form', () => {
      const id = 'MIG-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6/1/0';
      expect(devicesEnv({ vendor: 'nvidia', migDevices: [id] }).CUDA_VISIBLE_DEVICES).toBe(id);
    });

    it('refuses more than one MIG partition: a CUDA process would see only the first', () => {
      expect(() => devicesEnv({ vendor: 'nvidia', migDevices: ['MIG-a', 'MIG-b'] })).toThrow(/INVALID_ARGUMENT: .*one MIG partition only/);
    });

    it('refuses a MIG id that is not a MIG UUID', () => {
      expect(() => devicesEnv({ vendor: 'nvidia', migDevices: ['GPU-1234'] })).toThrow(/not a MIG UUID/);
      expect(() => devicesEnv({ vendor: 'nvidia', migDevices: ['MIG-1,2'] })).toThrow(/not a MIG UUID/);
    });

    it('refuses whole GPUs and a MIG partition together', () => {
      expect(() => devicesEnv({ vendor: 'nvidia', accelerators: [{ index: 0 }], migDevices: ['MIG-a'] })).toThrow(/not both/);
    });
  });

  describe('AMD', () => {
    it('filters at the ROCr level by index and numbers HIP devices within what ROCr left', () => {
      expect(devicesEnv({ vendor: 'amd', accelerators: [{ index: 4 }, { index: 6 }] })).toEqual({
        ROCR_VISIBLE_DEVICES: '4,6',
        HIP_VISIBLE_DEVICES: '0,1',
      });
    });

    it('does not set CUDA_VISIBLE_DEVICES, which HIP would apply as a third filter', () => {
      expect(devicesEnv({ vendor: 'amd', accelerators: [{ index: 1 }] })).not.toHaveProperty('CUDA_VISIBLE_DEVICES');
    });

    it('names ROCr devices by UUID when asked', () => {
      const env = devicesEnv({ vendor: 'amd', accelerators: [{ index: 1, uuid: 'GPU-f980f88ef31631a2' }] }, { identifyBy: 'uuid' });
      expect(env).toEqual({ ROCR_VISIBLE_DEVICES: 'GPU-f980f88ef31631a2', HIP_VISIBLE_DEVICES: '0' });
    });

    it('refuses MIG partitions', () => {
      expect(() => devicesEnv({ vendor: 'amd', migDevices: ['MIG-a'] })).toThrow(/NVIDIA GPUs only/);
    });
  });

  describe('Ascend', () => {
    it('lists logical ids in ascending order, the only order CANN accepts', () => {
      expect(devicesEnv({ vendor: 'ascend', accelerators: [{ index: 3 }, { index: 1 }, { index: 2 }] })).toEqual({
        ASCEND_RT_VISIBLE_DEVICES: '1,2,3',
      });
    });
  });

  describe('no accelerators', () => {
    it('hides every device when there is no allocation', () => {
      expect(devicesEnv(undefined)).toEqual(noDevicesEnv());
      expect(noDevicesEnv()).toMatchObject({ CUDA_VISIBLE_DEVICES: '', ROCR_VISIBLE_DEVICES: '', ASCEND_RT_VISIBLE_DEVICES: '' });
    });

    it('hides every device when the allocation is empty', () => {
      expect(devicesEnv({ vendor: 'nvidia', accelerators: [] })).toEqual(noDevicesEnv());
    });
  });

  describe('invalid allocations', () => {
    it('refuses a device listed twice', () => {
      expect(() => devicesEnv({ vendor: 'nvidia', accelerators: [{ index: 1 }, { index: 1 }] })).toThrow(/listed twice/);
    });

    it('refuses a negative or fractional index', () => {
      expect(() => devicesEnv({ vendor: 'nvidia', accelerators: [{ index: -1 }] })).toThrow(/non-negative integer/);
      expect(() => devicesEnv({ vendor: 'ascend', accelerators: [{ index: 1.5 }] })).toThrow(/non-negative integer/);
    });

    it('refuses a UUID with a comma or space, which would split or cut the list', () => {
      expect(() => devicesEnv({ vendor: 'nvidia', accelerators: [{ index: 0, uuid: 'GPU-1,GPU-2' }] })).toThrow(/characters/);
      expect(() => devicesEnv({ vendor: 'nvidia', accelerators: [{ index: 0, uuid: 'GPU 1' }] })).toThrow(/characters/);
    });

    it('refuses to identify by UUID when one is missing', () => {
      expect(() => devicesEnv({ vendor: 'nvidia', accelerators: [{ index: 0 }] }, { identifyBy: 'uuid' })).toThrow(/no UUID/);
    });

    it('refuses an unknown vendor', () => {
      expect(() => devicesEnv({ vendor: AcceleratorVendor.ACCELERATOR_VENDOR_UNSPECIFIED, accelerators: [{ index: 0 }] })).toThrow(
        /not one of nvidia, amd, ascend/,
      );
    });
  });
});

describe('withDevicesEnv', () => {
  it('drops every visibility variable the runtime inherited and adds the allocation', () => {
    const base = { PATH: '/usr/bin', CUDA_VISIBLE_DEVICES: '0,1,2,3,4,5,6,7', HIP_VISIBLE_DEVICES: '1', CUDA_DEVICE_ORDER: 'FASTEST_FIRST' };
    expect(withDevicesEnv(base, { vendor: 'ascend', accelerators: [{ index: 0 }] })).toEqual({
      PATH: '/usr/bin',
      ASCEND_RT_VISIBLE_DEVICES: '0',
    });
  });

  it('knows the variables of all three vendors', () => {
    expect(DEVICE_VISIBILITY_VARS).toEqual(
      expect.arrayContaining(['CUDA_VISIBLE_DEVICES', 'NVIDIA_VISIBLE_DEVICES', 'ROCR_VISIBLE_DEVICES', 'HIP_VISIBLE_DEVICES', 'ASCEND_RT_VISIBLE_DEVICES']),
    );
  });
});
