// Builders for placement specs: realistic nodes (HGX with NVSwitch, PCIe boxes, MIG GPUs) and
// requests; override what the scenario is about.
import {
  Accelerator,
  AcceleratorVendor,
  DeviceLink,
  LinkType,
  MigDevice,
  Nic,
  NodeInventory,
  PodPlacement,
  PodSet,
} from '@gpufleet/contracts';
import type { Packing, PlacementRequest } from '../../placer';
import { PlacementEngine } from '../placement-engine';

export const H100 = 'NVIDIA H100 80GB HBM3';
export const A100 = 'NVIDIA A100-SXM4-80GB';
export const L40S = 'NVIDIA L40S';
export const POOL = 'h100';

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

export interface PodSetOptions {
  name?: string;
  count?: number;
  size?: number;
  required?: string;
  preferred?: string;
  vcpu?: number;
  /** MiB */
  memoryMib?: number;
}

function podSet(accelerator: NonNullable<PodSet['resources']>['accelerator'], o: PodSetOptions): PodSet {
  return {
    name: o.name ?? 'main',
    count: o.count ?? 1,
    size: o.size ?? 1,
    resources: { accelerator, vcpu: o.vcpu ?? 0, memoryMib: o.memoryMib ?? 0 },
    topology: { requiredLevel: o.required ?? '', preferredLevel: o.preferred ?? '' },
  };
}

const none = { whole: undefined, sharedTokens: undefined, slice: undefined, partitionProfile: undefined };

export const whole = (n: number, o: PodSetOptions = {}): PodSet => podSet({ ...none, whole: n }, o);
export const shared = (tokens: number, o: PodSetOptions = {}): PodSet => podSet({ ...none, sharedTokens: tokens }, o);
export const slice = (s: { memoryMib?: number; memoryPercent?: number; coresPercent: number }, o: PodSetOptions = {}): PodSet =>
  podSet({ ...none, slice: { memoryMib: s.memoryMib, memoryPercent: s.memoryPercent, coresPercent: s.coresPercent } }, o);
export const partition = (profile: string, o: PodSetOptions = {}): PodSet => podSet({ ...none, partitionProfile: profile }, o);
export const hostOnly = (o: PodSetOptions = {}): PodSet => podSet(undefined, o);

export function request(key: string, podSets: PodSet[], packing: Packing = 'binpack', pool = POOL): PlacementRequest {
  return { key, pool, podSets, packing };
}

export interface PodOptions {
  podSet?: string;
  replica?: number;
  pod?: number;
  ids?: string[];
  tokens?: number;
  sliceMemoryMib?: number;
  sliceCoresPercent?: number;
  partition?: { acceleratorId: string; profile: string; start: number };
  vcpu?: number;
  memoryMib?: number;
}

/** A PodPlacement as a ledger entry holds it. */
export function podPlacement(nodeName: string, o: PodOptions = {}): PodPlacement {
  return {
    podSet: o.podSet ?? 'main',
    replica: o.replica ?? 0,
    pod: o.pod ?? 0,
    node: nodeName,
    acceleratorIds: o.ids ?? [],
    sharedTokens: o.tokens ?? 0,
    sliceMemoryMib: o.sliceMemoryMib ?? 0,
    sliceCoresPercent: o.sliceCoresPercent ?? 0,
    partition: o.partition,
    vcpu: o.vcpu ?? 0,
    memoryMib: o.memoryMib ?? 0,
  };
}

/** An engine with these nodes, all Ready, in pool POOL. */
export function engineWith(...inventories: NodeInventory[]): PlacementEngine {
  const engine = new PlacementEngine();
  for (const inventory of inventories) engine.upsertNode(inventory, true, POOL);
  return engine;
}

/** tryPlace + commit; the placements, or a thrown error with the failure message. */
export function admit(engine: PlacementEngine, placement: PlacementRequest): PodPlacement[] {
  const outcome = engine.tryPlace(placement);
  if (!outcome.ok) throw new Error(`${outcome.reason}: ${outcome.message}`);
  engine.commit(placement.key, outcome.placements);
  return outcome.placements;
}

/** "node:id,id" per pod, for compact expectations. */
export function where(placements: readonly PodPlacement[]): string[] {
  return placements.map((p) => {
    const devices = p.partition ? `${p.partition.acceleratorId}@${p.partition.profile}:${p.partition.start}` : p.acceleratorIds.join(',');
    return `${p.node}:${devices}`;
  });
}
