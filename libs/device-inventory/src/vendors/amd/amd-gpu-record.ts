import { presentText } from '../shared/tool-output';

/** One AMD GPU as amd-smi or rocm-smi describe it; absent where the tool had no reading. */
export interface AmdGpuRecord {
  /** The tool's GPU index (amd-smi "gpu", rocm-smi "cardN"). */
  index: number;
  product: string;
  uuid?: string;
  /** sysfs form, e.g. "0000:05:00.0" */
  pciBusId?: string;
  /** LLVM target, e.g. "gfx942" */
  gfxTarget?: string;
  /** MiB */
  memoryMib?: number;
  /** MiB */
  memoryUsedMib?: number;
  numaNode?: number;
  cpuAffinity?: string;
  powerLimitWatts?: number;
  serial?: string;
  driverVersion?: string;
}

/**
 * A serial worth reporting: amd-smi prints "0" or "0x0000000000000000" on boards whose FRU
 * EEPROM holds none, which would make every such board look like the same device.
 */
export function meaningfulSerial(raw: string | undefined): string | undefined {
  const serial = presentText(raw);
  return serial === undefined || /^(0x)?0+$/i.test(serial) ? undefined : serial;
}

/**
 * A driver version worth reporting. With the in-tree amdgpu driver amd-smi prints the kernel's
 * banner with its spaces removed ("Linuxversion6.14.0-24-generic(buildd@...)"), not a version.
 */
export function meaningfulDriverVersion(raw: string | undefined): string | undefined {
  const version = presentText(raw);
  return version !== undefined && /^\d+(\.\d+)+([-+.][\w.-]+)?$/.test(version) ? version : undefined;
}
