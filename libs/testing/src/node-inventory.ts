// Node inventories for specs and benchmarks: an 8-GPU HGX H100 with NVSwitch by default,
// with options for PCIe boxes, MIG-enabled GPUs, racks and zones.
import { Accelerator, AcceleratorVendor, DeviceLink, LinkType, MigDevice, Nic, NodeInventory } from '@gpufleet/contracts';

export const H100 = 'NVIDIA H100 80GB HBM3';
export const A100 = 'NVIDIA A100-SXM4-80GB';
export const L40S = 'NVIDIA L40S';

export interface NodeOptions {
  gpus?: number;
  product?: string;
  memoryMib?: number;
  rack?: string;
  zone?: string;
  /** Defaults to "<name>-hgx"; '' for none. */
  nvlinkDomain?: string;
  logicalCpus?: number;
  /** MiB */
  nodeMemoryMib?: number;
  links?: DeviceLink[];
  nics?: Nic[];
  /** Accelerator index -> MIG devices; listed accelerators are MIG-enabled. */
  mig?: Record<number, MigDevice[]>;
  numaOf?: (index: number) => number;
}

export function gpu(index: number, options: NodeOptions = {}): Accelerator {
  const mig = options.mig?.[index];
  return {
    id: `nvidia-${index}`,
    vendor: AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA,
    index,
    uuid: `GPU-${index}`,
    product: options.product ?? H100,
    family: 'hopper',
    memoryMib: options.memoryMib ?? 81_920,
    numaNode: options.numaOf ? options.numaOf(index) : index < 4 ? 0 : 1,
    migCapable: true,
    migEnabled: mig !== undefined,
    migDevices: mig ?? [],
  };
}

/** Every pair of GPUs joined by NVSwitch (NV18), as on an HGX H100 board. */
export function nvswitchLinks(gpus: number): DeviceLink[] {
  const links: DeviceLink[] = [];
  for (let a = 0; a < gpus; a++) {
    for (let b = a + 1; b < gpus; b++) links.push({ a: `nvidia-${a}`, b: `nvidia-${b}`, type: LinkType.LINK_TYPE_NVLINK, nvlinks: 18 });
  }
  return links;
}

export function link(a: number, b: number, type: LinkType, nvlinks?: number): DeviceLink {
  return { a: `nvidia-${a}`, b: `nvidia-${b}`, type, nvlinks };
}

export function nic(name: string, numaNode: number, state = 'ACTIVE'): Nic {
  return { name, port: 1, linkLayer: 'InfiniBand', state, numaNode };
}

export function node(name: string, options: NodeOptions = {}): NodeInventory {
  const gpus = options.gpus ?? 8;
  return {
    nodeName: name,
    cluster: 'dev',
    os: 'linux/ubuntu-22.04',
    kernel: '5.15.0',
    cpu: { vendor: 'GenuineIntel', model: 'Xeon 8480+', architecture: 'x86_64', sockets: 2, cores: 112, logicalCpus: options.logicalCpus ?? 224, numaNodes: 2 },
    memory: { totalMib: options.nodeMemoryMib ?? 2_000_000 },
    localStorageGib: 30_000,
    accelerators: Array.from({ length: gpus }, (_, i) => gpu(i, options)),
    nics: options.nics ?? [nic('mlx5_0', 0), nic('mlx5_1', 1)],
    links: options.links ?? nvswitchLinks(gpus),
    topology: {
      zone: options.zone ?? 'zone-a',
      rack: options.rack ?? 'rack-1',
      nvlinkDomain: options.nvlinkDomain ?? `${name}-hgx`,
    },
    labels: {},
    providers: [],
    generation: 1,
    observedAt: undefined,
    agentVersion: 'test',
  };
}

export function migDevice(profile: string, placementStart?: number, placementSize?: number): MigDevice {
  return { uuid: `MIG-${profile}-${placementStart ?? 'x'}`, profile, index: 0, placementStart, placementSize };
}
