import { AcceleratorVendor } from '@gpufleet/contracts';
import type { Interconnect } from './fleet-types';

/** What a fleet file may leave out for a well-known accelerator. */
export interface CatalogAccelerator {
  vendor: AcceleratorVendor;
  family: string;
  /** MiB, as the vendor tool reports the total. */
  memoryMib: number;
  computeCapability?: string;
  interconnect: Interconnect;
  /** Bonded NVLinks between each pair on the baseboard (NV18 on HGX H100). */
  nvlinks?: number;
  powerLimitWatts: number;
  migCapable: boolean;
}

const NVIDIA = AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA;
const AMD = AcceleratorVendor.ACCELERATOR_VENDOR_AMD;
const ASCEND = AcceleratorVendor.ACCELERATOR_VENDOR_ASCEND;

const nv = (
  family: string,
  memoryMib: number,
  computeCapability: string,
  interconnect: Interconnect,
  powerLimitWatts: number,
  migCapable: boolean,
  nvlinks?: number,
): CatalogAccelerator => ({ vendor: NVIDIA, family, memoryMib, computeCapability, interconnect, powerLimitWatts, migCapable, nvlinks });

/** Keyed by the product name the vendor tool prints (nvidia-smi, amd-smi, npu-smi). */
export const ACCELERATOR_CATALOG: Readonly<Record<string, CatalogAccelerator>> = {
  'NVIDIA B200': nv('blackwell', 183359, '10.0', 'nvlink', 1000, true, 18),
  'NVIDIA H200': nv('hopper', 143771, '9.0', 'nvlink', 700, true, 18),
  'NVIDIA H100 80GB HBM3': nv('hopper', 81559, '9.0', 'nvlink', 700, true, 18),
  'NVIDIA H100 NVL': nv('hopper', 95830, '9.0', 'pcie', 400, true),
  'NVIDIA H100 PCIe': nv('hopper', 81559, '9.0', 'pcie', 350, true),
  'NVIDIA H20': nv('hopper', 97871, '9.0', 'nvlink', 400, true, 18),
  'NVIDIA A100-SXM4-80GB': nv('ampere', 81920, '8.0', 'nvlink', 400, true, 12),
  'NVIDIA A100-SXM4-40GB': nv('ampere', 40960, '8.0', 'nvlink', 400, true, 12),
  'NVIDIA A100 80GB PCIe': nv('ampere', 81920, '8.0', 'pcie', 300, true),
  'NVIDIA A100-PCIE-40GB': nv('ampere', 40960, '8.0', 'pcie', 250, true),
  'NVIDIA A30': nv('ampere', 24576, '8.0', 'pcie', 165, true),
  'NVIDIA A10': nv('ampere', 23028, '8.6', 'pcie', 150, false),
  'NVIDIA L40S': nv('ada-lovelace', 46068, '8.9', 'pcie', 350, false),
  'NVIDIA L40': nv('ada-lovelace', 46068, '8.9', 'pcie', 300, false),
  'NVIDIA L4': nv('ada-lovelace', 23034, '8.9', 'pcie', 72, false),
  'NVIDIA RTX 6000 Ada Generation': nv('ada-lovelace', 49140, '8.9', 'pcie', 300, false),
  'Tesla T4': nv('turing', 15360, '7.5', 'pcie', 70, false),
  'AMD Instinct MI325X': { vendor: AMD, family: 'cdna3', memoryMib: 262144, computeCapability: 'gfx942', interconnect: 'xgmi', powerLimitWatts: 1000, migCapable: false },
  'AMD Instinct MI300X': { vendor: AMD, family: 'cdna3', memoryMib: 196608, computeCapability: 'gfx942', interconnect: 'xgmi', powerLimitWatts: 750, migCapable: false },
  // amd-smi lists each MI250X GCD as its own GPU with half the package's 128 GB.
  'AMD Instinct MI250X': { vendor: AMD, family: 'cdna2', memoryMib: 65536, computeCapability: 'gfx90a', interconnect: 'xgmi', powerLimitWatts: 500, migCapable: false },
  'AMD Instinct MI210': { vendor: AMD, family: 'cdna2', memoryMib: 65536, computeCapability: 'gfx90a', interconnect: 'pcie', powerLimitWatts: 300, migCapable: false },
  '910B2': { vendor: ASCEND, family: 'ascend910', memoryMib: 65536, interconnect: 'hccs', powerLimitWatts: 400, migCapable: false },
  '910B3': { vendor: ASCEND, family: 'ascend910', memoryMib: 65536, interconnect: 'hccs', powerLimitWatts: 400, migCapable: false },
  '910B4': { vendor: ASCEND, family: 'ascend910', memoryMib: 32768, interconnect: 'hccs', powerLimitWatts: 350, migCapable: false },
  '310P3': { vendor: ASCEND, family: 'ascend310', memoryMib: 21527, interconnect: 'pcie', powerLimitWatts: 150, migCapable: false },
};

export function lookupAccelerator(product: string): CatalogAccelerator | undefined {
  const key = Object.keys(ACCELERATOR_CATALOG).find((k) => k.toLowerCase() === product.toLowerCase());
  return key ? ACCELERATOR_CATALOG[key] : undefined;
}

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
