import { createHash } from 'node:crypto';
import {
  AcceleratorVendor,
  LinkType,
  type Accelerator,
  type DeviceLink,
  type MigDevice,
  type Nic,
} from '@gpufleet/contracts';
import type { HostInfo } from '../host/host-info';
import type { DetectionResult } from '../provider';
import type { Fleet, FleetAccelerators, FleetNics, FleetNode } from './fleet-types';

/** Everything the agent would learn about one simulated node. */
export interface SimulatedNodeInventory {
  node: FleetNode;
  detection: DetectionResult;
  host: HostInfo;
}

const VENDOR_PREFIX: Record<AcceleratorVendor, string> = {
  [AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA]: 'nvidia',
  [AcceleratorVendor.ACCELERATOR_VENDOR_AMD]: 'amd',
  [AcceleratorVendor.ACCELERATOR_VENDOR_ASCEND]: 'ascend',
  [AcceleratorVendor.ACCELERATOR_VENDOR_UNSPECIFIED]: 'accelerator',
  [AcceleratorVendor.UNRECOGNIZED]: 'accelerator',
};

function digest(...parts: Array<string | number>): Buffer {
  return createHash('sha256').update(parts.join('/')).digest();
}

/** A stable UUID-shaped id derived from cluster/node/device, so every run reports the same devices. */
export function deterministicUuid(...parts: Array<string | number>): string {
  const hex = digest(...parts).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

function numaOf(index: number, count: number, numaNodes: number): number {
  return Math.floor((index * numaNodes) / Math.max(count, 1));
}

/**
 * Linux numbers physical cores first across sockets and their SMT siblings after them, so a
 * NUMA node owns one range per hardware thread: 2×56 cores, 224 threads → "0-55,112-167".
 */
export function numaCpuList(numa: number, cores: number, logicalCpus: number, numaNodes: number): string {
  const perNuma = Math.floor(cores / numaNodes);
  const threads = Math.max(1, Math.floor(logicalCpus / cores));
  const ranges: string[] = [];
  for (let t = 0; t < threads; t++) {
    const first = t * cores + numa * perNuma;
    ranges.push(perNuma === 1 ? `${first}` : `${first}-${first + perNuma - 1}`);
  }
  return ranges.join(',');
}

/**
 * PCI buses spread over each NUMA node's half of the bus space (0x00-0x7f, 0x80-0xff), the
 * way GPUs sit behind separate root ports on HGX boards.
 */
function busOf(index: number, count: number, numaNodes: number): number {
  const numa = numaOf(index, count, numaNodes);
  const firstOnNuma = Math.ceil((numa * count) / numaNodes);
  const onNuma = Math.ceil(((numa + 1) * count) / numaNodes) - firstOnNuma;
  const span = Math.floor(0x100 / numaNodes);
  const step = Math.max(4, Math.floor((span - 0x20) / Math.max(onNuma, 1)));
  return numa * span + 0x18 + (index - firstOnNuma) * step;
}

function pciAddress(vendor: AcceleratorVendor, bus: number): string {
  const b = bus.toString(16).padStart(2, '0');
  // nvidia-smi prints an 8-digit domain in upper case; sysfs-based tools print 4 digits, lower case.
  return vendor === AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA ? `00000000:${b.toUpperCase()}:00.0` : `0000:${b}:00.0`;
}

function migDevices(cluster: string, node: string, gpu: number, spec: FleetAccelerators): MigDevice[] {
  return spec.migLayouts[gpu].map((p, index) => ({
    uuid: `MIG-${deterministicUuid(cluster, node, 'gpu', gpu, 'mig', index)}`,
    profile: p.profile,
    index,
    // GPU instance ids in creation order; each GPU instance holds one full compute instance (id 0).
    gpuInstanceId: index + 1,
    computeInstanceId: 0,
    memoryMib: p.memoryMib,
    placementStart: p.start,
    placementSize: p.size,
  }));
}

function accelerators(fleet: Fleet, node: FleetNode, spec: FleetAccelerators): Accelerator[] {
  const prefix = VENDOR_PREFIX[spec.vendor];
  const numaNodes = node.cpu.numaNodes;
  return Array.from({ length: spec.count }, (_, index) => {
    const hash = digest(fleet.cluster, node.name, 'gpu', index);
    const uuid = deterministicUuid(fleet.cluster, node.name, 'gpu', index);
    const numa = numaOf(index, spec.count, numaNodes);
    const mig = spec.migEnabled ? migDevices(fleet.cluster, node.name, index, spec) : [];
    return {
      id: `${prefix}-${index}`,
      vendor: spec.vendor,
      index,
      uuid: spec.vendor === AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA ? `GPU-${uuid}` : uuid,
      product: spec.product,
      family: spec.family,
      memoryMib: spec.memoryMib,
      ...(spec.computeCapability !== undefined ? { computeCapability: spec.computeCapability } : {}),
      pciBusId: pciAddress(spec.vendor, busOf(index, spec.count, numaNodes)),
      numaNode: numa,
      cpuAffinity: numaCpuList(numa, node.cpu.cores, node.cpu.logicalCpus, numaNodes),
      // An idle GPU: the driver holds a little memory, more once MIG instances exist.
      memoryUsedMib: mig.length > 0 ? 13 * mig.length : 1,
      utilizationPercent: 0,
      temperatureCelsius: 28 + (hash[0] % 8),
      ...(spec.powerLimitWatts !== undefined ? { powerLimitWatts: spec.powerLimitWatts } : {}),
      migCapable: spec.migCapable,
      migEnabled: spec.migEnabled,
      migDevices: mig,
      serial: `1${String(hash.readUInt32BE(4)).padStart(12, '0')}`,
    };
  });
}

/** NIC j pairs with the GPU it sits next to (one per GPU on HGX); without GPUs NICs spread over NUMA nodes. */
function pairedGpu(nic: number, nicCount: number, gpuCount: number): number | undefined {
  return gpuCount > 0 ? Math.floor((nic * gpuCount) / nicCount) : undefined;
}

function nics(node: FleetNode, spec: FleetNics, gpus: Accelerator[]): Nic[] {
  const numaNodes = node.cpu.numaNodes;
  return Array.from({ length: spec.count }, (_, j) => {
    const gpu = pairedGpu(j, spec.count, gpus.length);
    const numa = gpu !== undefined ? gpus[gpu].numaNode! : numaOf(j, spec.count, numaNodes);
    // The NIC sits on the GPU's PCIe switch, two buses before it.
    const bus = gpu !== undefined ? busOf(gpu, gpus.length, numaNodes) - 2 : busOf(j, spec.count, numaNodes);
    const netdev = spec.linkLayer === 'InfiniBand' ? `ibp${bus}s0` : `enp${bus}s0np0`;
    return {
      name: `${spec.namePrefix}${j}`,
      port: 1,
      linkLayer: spec.linkLayer,
      state: spec.down.includes(j) ? 'DOWN' : 'ACTIVE',
      rateGbps: spec.rateGbps,
      numaNode: numa,
      pciBusId: `0000:${bus.toString(16).padStart(2, '0')}:00.0`,
      netdev,
    };
  });
}

function pcieLink(sameSwitch: boolean, sameNuma: boolean): LinkType {
  if (sameSwitch) return LinkType.LINK_TYPE_PIX;
  return sameNuma ? LinkType.LINK_TYPE_NODE : LinkType.LINK_TYPE_SYS;
}

/** The `nvidia-smi topo -m` matrix as links: every accelerator pair, and every accelerator–NIC pair. */
function links(spec: FleetAccelerators | undefined, gpus: Accelerator[], nicList: Nic[]): DeviceLink[] {
  const out: DeviceLink[] = [];
  for (let i = 0; i < gpus.length; i++) {
    for (let j = i + 1; j < gpus.length; j++) {
      const a = gpus[i].id;
      const b = gpus[j].id;
      switch (spec?.interconnect) {
        case 'nvlink':
          out.push({ a, b, type: LinkType.LINK_TYPE_NVLINK, nvlinks: spec.nvlinks });
          break;
        case 'xgmi':
          out.push({ a, b, type: LinkType.LINK_TYPE_XGMI });
          break;
        case 'hccs':
          out.push({ a, b, type: LinkType.LINK_TYPE_HCCS });
          break;
        default: {
          const perSwitch = spec?.gpusPerPcieSwitch ?? 1;
          const sameSwitch = perSwitch > 1 && Math.floor(i / perSwitch) === Math.floor(j / perSwitch);
          out.push({ a, b, type: pcieLink(sameSwitch, gpus[i].numaNode === gpus[j].numaNode) });
        }
      }
    }
  }
  nicList.forEach((nic, j) => {
    const paired = pairedGpu(j, nicList.length, gpus.length);
    gpus.forEach((gpu, i) => {
      out.push({ a: gpu.id, b: nic.name, type: pcieLink(i === paired, gpu.numaNode === nic.numaNode) });
    });
  });
  return out;
}

export function simulatedHostInfo(node: FleetNode): HostInfo {
  return {
    cpu: { ...node.cpu },
    memory: { ...node.memory },
    os: node.os,
    kernel: node.kernel,
    localStorageGib: node.localStorageGib,
  };
}

/**
 * Names for a message: all of a short list, the first few of a long one ("a, b, …, h, … (1000 in
 * all)"), so an error about a 1,000-node fleet file stays one line.
 */
export function listNames(names: readonly string[], shown = 8): string {
  return names.length <= shown ? names.join(', ') : `${names.slice(0, shown).join(', ')}, … (${names.length} in all)`;
}

/**
 * The fleet's nodes for a message, an entry of three or more nodes as its first and last
 * ("h100-0 … h100-499, l40s-0, cpu-0, cpu-1"), at most `shown` of those.
 */
export function fleetNodeList(fleet: Fleet, shown = 8): string {
  const items: string[] = [];
  for (let first = 0; first < fleet.nodes.length; ) {
    let last = first;
    while (last + 1 < fleet.nodes.length && fleet.nodes[last + 1].group === fleet.nodes[first].group) last++;
    const entry = fleet.nodes.slice(first, last + 1).map((n) => n.name);
    items.push(...(entry.length >= 3 ? [`${entry[0]} … ${entry[entry.length - 1]}`] : entry));
    first = last + 1;
  }
  return items.length <= shown ? items.join(', ') : `${items.slice(0, shown).join(', ')}, … (${fleet.nodes.length} nodes in all)`;
}

export function findFleetNode(fleet: Fleet, nodeName: string): FleetNode {
  const node = fleet.nodes.find((n) => n.name === nodeName);
  if (!node) {
    throw new Error(`UNKNOWN_NODE: the fleet of cluster ${JSON.stringify(fleet.cluster)} has no node ${JSON.stringify(nodeName)}; its nodes are ${fleetNodeList(fleet)}`);
  }
  return node;
}

/** The devices and host facts a simulated node reports; the same every time for the same fleet. */
export function simulatedInventory(fleet: Fleet, nodeName: string): SimulatedNodeInventory {
  const node = findFleetNode(fleet, nodeName);
  return { node, detection: simulatedDetection(fleet, node), host: simulatedHostInfo(node) };
}

/** What the vendor tools would report on `node` (one of `fleet`'s nodes): accelerators, NICs, links, versions. */
export function simulatedDetection(fleet: Fleet, node: FleetNode): DetectionResult {
  const gpus = node.accelerators ? accelerators(fleet, node, node.accelerators) : [];
  const nicList = node.nics ? nics(node, node.nics, gpus) : [];
  return {
    accelerators: gpus,
    nics: nicList,
    links: links(node.accelerators, gpus, nicList),
    ...(node.driverVersion !== undefined ? { driverVersion: node.driverVersion } : {}),
    ...(node.runtimeVersion !== undefined ? { runtimeVersion: node.runtimeVersion } : {}),
  };
}
