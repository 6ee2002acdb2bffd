import type { Cpu, TopologyPlacement } from '@gpufleet/contracts';
import { isValidLabelValue } from '../labels/label-value';
import { ARM_VENDORS, coresPerSocket, cpuVendorOf, DEFAULT_CPU_MODEL } from './catalog';
import { childPath, type FieldReader, type Issues } from './field-reader';
import type { FleetNics, RdmaLinkLayer } from './fleet-types';
import { fillNodePlaceholders } from './node-names';

/** The node fields that describe the host (CPU, memory, OS, NICs, placement) rather than its accelerators. */
export const HOST_FIELDS = [
  'cpu',
  'memoryGib',
  'memoryMib',
  'localStorageGib',
  'os',
  'kernel',
  'driverVersion',
  'runtimeVersion',
  'topology',
  'labels',
  'nics',
] as const;
const CPU_FIELDS = ['vendor', 'model', 'architecture', 'sockets', 'cores', 'logicalCpus', 'numaNodes'] as const;
const TOPOLOGY_FIELDS = ['zone', 'rack', 'nvlinkDomain'] as const;
const NIC_FIELDS = ['count', 'rateGbps', 'linkLayer', 'namePrefix', 'down'] as const;
const ARCHITECTURES: Record<string, string> = {
  x86_64: 'x86_64',
  amd64: 'x86_64',
  aarch64: 'aarch64',
  arm64: 'aarch64',
  ppc64le: 'ppc64le',
  s390x: 's390x',
};
const LINK_LAYERS: Record<string, RdmaLinkLayer> = {
  infiniband: 'InfiniBand',
  ib: 'InfiniBand',
  ethernet: 'Ethernet',
  roce: 'Ethernet',
};
export const DEFAULT_MEMORY_GIB = 1024;
/** Two 3.84 TB NVMe drives, GiB. */
export const DEFAULT_LOCAL_STORAGE_GIB = 7152;
export const DEFAULT_OS = 'linux/ubuntu-22.04';
export const DEFAULT_KERNEL = '5.15.0-105-generic';
const DEFAULT_NIC_RATE_GBPS = 400;
const OS_PATTERN = /^[a-z]+(\/[a-z0-9][a-z0-9._-]*)?$/;
const LABEL_KEY = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** Node facts a `defaults` section or a node entry may set; merged field by field. */
export interface HostSpec {
  cpu?: Partial<Cpu>;
  memoryMib?: number;
  localStorageGib?: number;
  os?: string;
  kernel?: string;
  driverVersion?: string;
  runtimeVersion?: string;
  topology?: Partial<TopologyPlacement>;
  labels?: Record<string, string>;
  nics?: Partial<FleetNics>;
}

function defined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export function readMemoryMib(f: FieldReader, mibKey: string, gibKey: string): number | undefined {
  if (f.has(mibKey) && f.has(gibKey)) {
    f.issues.add(f.at(gibKey), `give ${gibKey} or ${mibKey}, not both`);
    return undefined;
  }
  const gib = f.positiveInteger(gibKey);
  return gib !== undefined ? gib * 1024 : f.positiveInteger(mibKey);
}

function readLabels(f: FieldReader): Record<string, string> | undefined {
  const labels = f.stringMap('labels');
  if (!labels) return undefined;
  for (const [key, value] of Object.entries(labels)) {
    const path = childPath(f.at('labels'), key);
    if (!LABEL_KEY.test(key) || key.length > 316) {
      f.issues.add(path, 'expected a Kubernetes label key such as "example.com/team" (prefix/name, name up to 63 characters)');
    } else if (!isValidLabelValue(fillNodePlaceholders(value, 'n', 0))) {
      f.issues.expected(path, 'a label value (up to 63 of A-Z a-z 0-9 . _ -, alphanumeric at both ends)', value);
    }
  }
  return labels;
}

function readNics(f: FieldReader): Partial<FleetNics> | undefined {
  const n = f.mapping('nics', NIC_FIELDS);
  if (!n) return undefined;
  const down = n.list('down');
  const downIndices: number[] = [];
  down?.forEach((value, i) => {
    if (typeof value === 'number' && Number.isInteger(value) && value >= 0) downIndices.push(value);
    else n.issues.expected(childPath(n.at('down'), i), 'a NIC index (0, 1, ...)', value);
  });
  return defined({
    count: n.nonNegativeInteger('count'),
    rateGbps: n.positiveInteger('rateGbps'),
    linkLayer: n.oneOf('linkLayer', LINK_LAYERS),
    namePrefix: n.string('namePrefix'),
    down: down ? downIndices : undefined,
  });
}

export function readHostSpec(f: FieldReader): HostSpec {
  const cpu = f.mapping('cpu', CPU_FIELDS);
  const topology = f.mapping('topology', TOPOLOGY_FIELDS);
  const os = f.string('os');
  if (os !== undefined && !OS_PATTERN.test(os)) {
    f.issues.expected(f.at('os'), 'an OS identity such as "linux/ubuntu-22.04"', os);
  }
  return defined({
    cpu: cpu
      ? defined({
          vendor: cpu.string('vendor'),
          model: cpu.string('model'),
          architecture: cpu.oneOf('architecture', ARCHITECTURES),
          sockets: cpu.positiveInteger('sockets'),
          cores: cpu.positiveInteger('cores'),
          logicalCpus: cpu.positiveInteger('logicalCpus'),
          numaNodes: cpu.positiveInteger('numaNodes'),
        })
      : undefined,
    memoryMib: readMemoryMib(f, 'memoryMib', 'memoryGib'),
    localStorageGib: f.nonNegativeInteger('localStorageGib'),
    os,
    kernel: f.string('kernel'),
    driverVersion: f.string('driverVersion'),
    runtimeVersion: f.string('runtimeVersion'),
    topology: topology
      ? defined({ zone: topology.string('zone'), rack: topology.string('rack'), nvlinkDomain: topology.string('nvlinkDomain') })
      : undefined,
    labels: readLabels(f),
    nics: readNics(f),
  });
}

export function mergeHostSpecs(base: HostSpec, over: HostSpec): HostSpec {
  return {
    ...base,
    ...over,
    cpu: base.cpu || over.cpu ? { ...base.cpu, ...over.cpu } : undefined,
    topology: { ...base.topology, ...over.topology },
    labels: { ...base.labels, ...over.labels },
    nics: base.nics || over.nics ? { ...base.nics, ...over.nics } : undefined,
  };
}

export function resolveCpu(spec: Partial<Cpu> | undefined, path: string, issues: Issues): Cpu {
  const model = spec?.model ?? DEFAULT_CPU_MODEL;
  const vendor = spec?.vendor ?? cpuVendorOf(model) ?? 'unknown';
  const architecture = spec?.architecture ?? (ARM_VENDORS.has(vendor) ? 'aarch64' : 'x86_64');
  // Multi-socket x86 boards are the norm under 8 GPUs; Arm servers here are mostly single-socket (Grace).
  const sockets = spec?.sockets ?? (architecture === 'x86_64' ? 2 : 1);
  let cores = spec?.cores;
  if (cores === undefined) {
    const perSocket = coresPerSocket(model);
    if (perSocket === undefined) {
      issues.add(
        childPath(path, 'cores'),
        `expected a positive integer (physical cores of the node; cannot be inferred from model ${JSON.stringify(model)}), got nothing`,
      );
    }
    cores = (perSocket ?? 1) * sockets;
  }
  const logicalCpus = spec?.logicalCpus ?? cores * (architecture === 'x86_64' ? 2 : 1);
  if (logicalCpus < cores) {
    issues.add(childPath(path, 'logicalCpus'), `expected at least cores (${cores}), got ${logicalCpus}`);
  }
  return { vendor, model, architecture, sockets, cores, logicalCpus, numaNodes: spec?.numaNodes ?? sockets };
}

export function resolveNics(spec: Partial<FleetNics> | undefined, path: string, issues: Issues): FleetNics | undefined {
  if (!spec) return undefined;
  if (spec.count === undefined) {
    issues.expected(childPath(path, 'count'), 'a non-negative integer', undefined);
    return undefined;
  }
  if (spec.count === 0) return undefined;
  const down = spec.down ?? [];
  down.forEach((index, i) => {
    if (index >= spec.count!) {
      issues.add(childPath(childPath(path, 'down'), i), `expected a NIC index from 0 to ${spec.count! - 1}, got ${index}`);
    }
  });
  return {
    count: spec.count,
    rateGbps: spec.rateGbps ?? DEFAULT_NIC_RATE_GBPS,
    linkLayer: spec.linkLayer ?? 'InfiniBand',
    namePrefix: spec.namePrefix ?? 'mlx5_',
    down: [...new Set(down)].sort((a, b) => a - b),
  };
}

