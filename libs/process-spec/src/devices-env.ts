import { AcceleratorVendor } from '@gpufleet/contracts';
import { ProcessRuntimeError } from './errors';

/**
 * The environment that exposes a pod's allocated accelerators to its process, per vendor:
 *
 * - NVIDIA: `CUDA_VISIBLE_DEVICES` lists indexes or UUIDs; CUDA enumerates them in the order
 *   given. CUDA's own default order is "fastest first", which need not be the PCI order
 *   nvidia-smi numbers by, so `CUDA_DEVICE_ORDER=PCI_BUS_ID` makes an index mean the same to
 *   both. A MIG partition is named by its UUID ("MIG-…"); a CUDA process enumerates one MIG
 *   device only, so a pod holds at most one. `NVIDIA_VISIBLE_DEVICES` carries the same list for
 *   the NVIDIA container toolkit, should the pod start a container itself.
 * - AMD: `ROCR_VISIBLE_DEVICES` filters at the ROCr level, under HIP and OpenCL, and takes
 *   indexes or UUIDs. `HIP_VISIBLE_DEVICES` is applied after it and counts within the devices
 *   ROCr left, so it is `0..n-1`, never the physical indexes again (that would hide everything).
 *   Setting both also keeps Ray (used by vLLM) from refusing a lone `ROCR_VISIBLE_DEVICES`.
 *   `CUDA_VISIBLE_DEVICES` is not set on AMD: HIP would read it as a third filter.
 * - Ascend: `ASCEND_RT_VISIBLE_DEVICES` lists logical device ids, in ascending order only.
 */
export type AcceleratorVendorName = 'nvidia' | 'amd' | 'ascend';

export interface AllocatedAccelerator {
  /** The index the vendor tool prints (nvidia-smi, amd-smi / rocm-smi, npu-smi logical id). */
  index: number;
  /** e.g. "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6" (NVIDIA) or "GPU-<hex>" as ROCr names it (AMD). */
  uuid?: string;
}

export interface DeviceAllocation {
  vendor: AcceleratorVendorName | AcceleratorVendor;
  /** Whole or shared accelerators. */
  accelerators?: readonly AllocatedAccelerator[];
  /** MIG partition UUIDs ("MIG-…"), NVIDIA only; at most one (a CUDA process sees one MIG device). */
  migDevices?: readonly string[];
}

export interface DevicesEnvOptions {
  /**
   * How NVIDIA and AMD devices are named: `index` (default: what engines such as vLLM and Ray
   * parse) or `uuid` (stable across reboots and driver reordering; every accelerator needs one).
   * Ascend has only logical ids.
   */
  identifyBy?: 'index' | 'uuid';
}

/** Every variable that selects devices; a child never inherits these from the runtime. */
export const DEVICE_VISIBILITY_VARS: readonly string[] = Object.freeze([
  'CUDA_VISIBLE_DEVICES',
  'CUDA_DEVICE_ORDER',
  'NVIDIA_VISIBLE_DEVICES',
  'ROCR_VISIBLE_DEVICES',
  'HIP_VISIBLE_DEVICES',
  'GPU_DEVICE_ORDINAL',
  'ASCEND_RT_VISIBLE_DEVICES',
  'ASCEND_VISIBLE_DEVICES',
]);

const DEVICE_ID = /^[A-Za-z0-9][A-Za-z0-9_.:/-]*$/;

/** The environment for a pod without accelerators: every runtime sees an empty device list. */
export function noDevicesEnv(): Record<string, string> {
  return {
    CUDA_VISIBLE_DEVICES: '',
    NVIDIA_VISIBLE_DEVICES: 'none',
    ROCR_VISIBLE_DEVICES: '',
    HIP_VISIBLE_DEVICES: '',
    ASCEND_RT_VISIBLE_DEVICES: '',
  };
}

/** The visibility variables for an allocation; no allocation (or an empty one) hides every device. */
export function devicesEnv(allocation: DeviceAllocation | undefined, options: DevicesEnvOptions = {}): Record<string, string> {
  if (!allocation) return noDevicesEnv();
  const vendor = vendorName(allocation.vendor);
  const accelerators = allocation.accelerators ?? [];
  const mig = allocation.migDevices ?? [];
  if (mig.length > 0) return migEnv(vendor, accelerators, mig);
  if (accelerators.length === 0) return noDevicesEnv();
  checkAccelerators(accelerators);
  const identifyBy = options.identifyBy ?? 'index';
  switch (vendor) {
    case 'nvidia': {
      const ids = identifiers(accelerators, identifyBy).join(',');
      return { CUDA_VISIBLE_DEVICES: ids, NVIDIA_VISIBLE_DEVICES: ids, CUDA_DEVICE_ORDER: 'PCI_BUS_ID' };
    }
    case 'amd':
      return {
        ROCR_VISIBLE_DEVICES: identifiers(accelerators, identifyBy).join(','),
        HIP_VISIBLE_DEVICES: accelerators.map((_, i) => String(i)).join(','),
      };
    case 'ascend':
      return {
        ASCEND_RT_VISIBLE_DEVICES: [...accelerators]
          .map((a) => a.index)
          .sort((a, b) => a - b)
          .join(','),
      };
  }
}

/**
 * `base` without any inherited visibility variable, plus those of the allocation: what a pod's
 * process gets, so that it never sees the devices the runtime itself was started with.
 */
export function withDevicesEnv(
  base: NodeJS.ProcessEnv,
  allocation: DeviceAllocation | undefined,
  options: DevicesEnvOptions = {},
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(base)) {
    if (value !== undefined && !DEVICE_VISIBILITY_VARS.includes(name)) env[name] = value;
  }
  return { ...env, ...devicesEnv(allocation, options) };
}

export function vendorName(vendor: AcceleratorVendorName | AcceleratorVendor): AcceleratorVendorName {
  switch (vendor) {
    case 'nvidia':
    case AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA:
      return 'nvidia';
    case 'amd':
    case AcceleratorVendor.ACCELERATOR_VENDOR_AMD:
      return 'amd';
    case 'ascend':
    case AcceleratorVendor.ACCELERATOR_VENDOR_ASCEND:
      return 'ascend';
    default:
      throw new ProcessRuntimeError('INVALID_ARGUMENT', `accelerator vendor ${String(vendor)} is not one of nvidia, amd, ascend`);
  }
}

function migEnv(vendor: AcceleratorVendorName, accelerators: readonly AllocatedAccelerator[], mig: readonly string[]): Record<string, string> {
  if (vendor !== 'nvidia') throw new ProcessRuntimeError('INVALID_ARGUMENT', `MIG partitions exist on NVIDIA GPUs only, not on ${vendor}`);
  if (accelerators.length > 0) {
    throw new ProcessRuntimeError('INVALID_ARGUMENT', 'an allocation holds either whole accelerators or a MIG partition, not both');
  }
  if (mig.length > 1) {
    throw new ProcessRuntimeError(
      'INVALID_ARGUMENT',
      `a process can use one MIG partition only (CUDA enumerates a single MIG device), got ${mig.length}: ${mig.join(', ')}`,
    );
  }
  const uuid = mig[0];
  if (!/^MIG-/.test(uuid) || !DEVICE_ID.test(uuid)) {
    throw new ProcessRuntimeError('INVALID_ARGUMENT', `MIG device "${uuid}" is not a MIG UUID as nvidia-smi -L prints it ("MIG-…")`);
  }
  return { CUDA_VISIBLE_DEVICES: uuid, NVIDIA_VISIBLE_DEVICES: uuid };
}

function checkAccelerators(accelerators: readonly AllocatedAccelerator[]): void {
  const seen = new Set<number>();
  for (const a of accelerators) {
    if (!Number.isInteger(a.index) || a.index < 0) {
      throw new ProcessRuntimeError('INVALID_ARGUMENT', `accelerator index ${a.index} is not a non-negative integer`);
    }
    if (seen.has(a.index)) throw new ProcessRuntimeError('INVALID_ARGUMENT', `accelerator ${a.index} is listed twice`);
    seen.add(a.index);
    if (a.uuid !== undefined && a.uuid !== '' && !DEVICE_ID.test(a.uuid)) {
      throw new ProcessRuntimeError('INVALID_ARGUMENT', `accelerator ${a.index} has UUID "${a.uuid}", which contains characters no device id has`);
    }
  }
}

function identifiers(accelerators: readonly AllocatedAccelerator[], identifyBy: 'index' | 'uuid'): string[] {
  if (identifyBy === 'index') return accelerators.map((a) => String(a.index));
  return accelerators.map((a) => {
    if (!a.uuid) throw new ProcessRuntimeError('INVALID_ARGUMENT', `accelerator ${a.index} has no UUID to identify it by`);
    return a.uuid;
  });
}
