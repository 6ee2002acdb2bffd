// Builders for node inventories in specs: realistic defaults, override what the scenario is about.
import { Accelerator, AcceleratorVendor, MigDevice, NodeInventory } from '@gpufleet/contracts';

export const H100 = { product: 'NVIDIA H100 80GB HBM3', memoryMib: 81_559, family: 'hopper' };
export const A100_80GB = { product: 'NVIDIA A100-SXM4-80GB', memoryMib: 81_920, family: 'ampere' };
export const L40S = { product: 'NVIDIA L40S', memoryMib: 46_068, family: 'ada-lovelace' };

export interface AcceleratorOptions {
  product?: string;
  memoryMib?: number;
  family?: string;
  migEnabled?: boolean;
  migDevices?: MigDevice[];
}

export function accelerator(index: number, options: AcceleratorOptions = {}): Accelerator {
  return {
    id: `nvidia-${index}`,
    vendor: AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA,
    index,
    uuid: `GPU-${index.toString(16).padStart(8, '0')}-0000-0000-0000-000000000000`,
    product: options.product ?? H100.product,
    family: options.family ?? H100.family,
    memoryMib: options.memoryMib ?? H100.memoryMib,
    computeCapability: '9.0',
    pciBusId: `00000000:${(0x18 + index * 0x10).toString(16)}:00.0`,
    numaNode: index < 4 ? 0 : 1,
    migCapable: true,
    migEnabled: options.migEnabled ?? false,
    migDevices: options.migDevices ?? [],
  };
}

export function migDevice(profile: string, placementStart?: number, placementSize?: number): MigDevice {
  return { uuid: `MIG-${profile}-${placementStart ?? 'x'}`, profile, index: 0, placementStart, placementSize };
}

export interface NodeOptions {
  gpus?: number;
  gpu?: AcceleratorOptions;
  /** Per-index overrides, e.g. `{ 0: { migEnabled: true } }`. */
  gpuOverrides?: Record<number, AcceleratorOptions>;
  cpuVendor?: string;
  cpuModel?: string;
  architecture?: string;
  logicalCpus?: number;
  memoryMib?: number;
  localStorageGib?: number;
  os?: string;
  labels?: Record<string, string>;
  generation?: number;
}

export function nodeInventory(name: string, options: NodeOptions = {}): NodeInventory {
  const gpus = options.gpus ?? 8;
  return {
    nodeName: name,
    cluster: 'dev',
    os: options.os ?? 'linux/ubuntu-22.04',
    kernel: '5.15.0-119-generic',
    cpu: {
      vendor: options.cpuVendor ?? 'GenuineIntel',
      model: options.cpuModel ?? 'Intel(R) Xeon(R) Platinum 8480+',
      architecture: options.architecture ?? 'x86_64',
      sockets: 2,
      cores: 112,
      logicalCpus: options.logicalCpus ?? 224,
      numaNodes: 2,
    },
    memory: { totalMib: options.memoryMib ?? 2_000_000 },
    localStorageGib: options.localStorageGib ?? 30_000,
    accelerators: Array.from({ length: gpus }, (_, i) => accelerator(i, { ...options.gpu, ...options.gpuOverrides?.[i] })),
    nics: [],
    links: [],
    topology: { zone: 'zone-a', rack: 'rack-1', nvlinkDomain: `${name}-hgx` },
    labels: options.labels ?? {},
    providers: [],
    generation: options.generation ?? 1,
    observedAt: undefined,
    agentVersion: 'test',
  };
}

export function cpuNodeInventory(name: string, options: NodeOptions = {}): NodeInventory {
  return nodeInventory(name, {
    cpuVendor: 'AuthenticAMD',
    cpuModel: 'AMD EPYC 9654 96-Core Processor',
    logicalCpus: 192,
    memoryMib: 768 * 1024,
    localStorageGib: 3_500,
    ...options,
    gpus: 0,
  });
}
