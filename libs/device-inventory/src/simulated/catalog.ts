import { AcceleratorVendor } from '@gpufleet/contracts';

const NVIDIA = AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA;
const AMD = AcceleratorVendor.ACCELERATOR_VENDOR_AMD;
const ASCEND = AcceleratorVendor.ACCELERATOR_VENDOR_ASCEND;

/** Driver and runtime (CUDA / ROCm / CANN) versions a simulated node reports unless told otherwise. */
export const DEFAULT_VERSIONS: Readonly<Record<AcceleratorVendor, { driver: string; runtime: string } | undefined>> = {
  [NVIDIA]: { driver: '550.54.15', runtime: '12.4' },
  [AMD]: { driver: '6.7.0', runtime: '6.2.0' },
  [ASCEND]: { driver: '24.1.rc2', runtime: '8.0.RC2' },
  [AcceleratorVendor.ACCELERATOR_VENDOR_UNSPECIFIED]: undefined,
  [AcceleratorVendor.UNRECOGNIZED]: undefined,
};

/** The CPU of a node whose fleet entry says nothing about it: a common HGX host. */
export const DEFAULT_CPU_MODEL = 'Intel(R) Xeon(R) Platinum 8480+';

/** Cores per socket for models whose name does not say it ("AMD EPYC 9654 96-Core Processor" does). */
const CORES_PER_SOCKET: Readonly<Record<string, number>> = {
  'Intel(R) Xeon(R) Platinum 8480+': 56,
  'Intel(R) Xeon(R) Platinum 8468': 48,
  'Intel(R) Xeon(R) Platinum 8592+': 64,
  'Intel(R) Xeon(R) Platinum 8380': 40,
  'Intel(R) Xeon(R) Gold 6448Y': 32,
  'Neoverse-V2': 72,
  'Kunpeng-920': 48,
};

export function coresPerSocket(model: string): number | undefined {
  const stated = /(\d+)-Core/i.exec(model);
  return stated ? Number(stated[1]) : CORES_PER_SOCKET[model];
}

/** The vendor_id-style vendor (as /proc/cpuinfo or lscpu print it) for a CPU model name. */
export function cpuVendorOf(model: string): string | undefined {
  if (/\b(AMD|EPYC)\b/i.test(model)) return 'AuthenticAMD';
  if (/\b(Intel|Xeon)\b/i.test(model)) return 'GenuineIntel';
  if (/Neoverse|Grace/i.test(model)) return 'ARM';
  if (/Kunpeng/i.test(model)) return 'HiSilicon';
  if (/Ampere/i.test(model)) return 'Ampere';
  return undefined;
}

export const ARM_VENDORS: ReadonlySet<string> = new Set(['ARM', 'HiSilicon', 'Ampere', 'NVIDIA', 'Fujitsu', 'Cavium']);
