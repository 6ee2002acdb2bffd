import { AcceleratorVendor } from '@gpufleet/contracts';
import { lookupAccelerator, migGeometryForMemory, migMemoryClassesGb, type Interconnect } from '../catalog';
import { childPath, FieldReader, isMapping, type Issues } from './field-reader';
import type { FleetAccelerators, MigPartition } from './fleet-types';
import { readMemoryMib } from './host-spec';
import { placeMigPartitions, type MigRequest } from './mig-placement';

const ACCELERATOR_FIELDS = [
  'product',
  'count',
  'vendor',
  'memoryMib',
  'memoryGib',
  'computeCapability',
  'family',
  'interconnect',
  'nvlinks',
  'gpusPerPcieSwitch',
  'powerLimitWatts',
  'mig',
] as const;
const MIG_FIELDS = ['capable', 'enabled', 'partitions', 'gpus'] as const;
const PARTITION_FIELDS = ['profile', 'start'] as const;

const VENDORS: Record<string, AcceleratorVendor> = {
  nvidia: AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA,
  amd: AcceleratorVendor.ACCELERATOR_VENDOR_AMD,
  ascend: AcceleratorVendor.ACCELERATOR_VENDOR_ASCEND,
};
const INTERCONNECTS: Record<string, Interconnect> = { nvlink: 'nvlink', pcie: 'pcie', xgmi: 'xgmi', hccs: 'hccs' };
const INTERCONNECT_VENDOR: Record<Interconnect, AcceleratorVendor | undefined> = {
  nvlink: AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA,
  xgmi: AcceleratorVendor.ACCELERATOR_VENDOR_AMD,
  hccs: AcceleratorVendor.ACCELERATOR_VENDOR_ASCEND,
  pcie: undefined,
};

function inferVendor(product: string): AcceleratorVendor | undefined {
  if (/^(NVIDIA|Tesla|Quadro|GeForce)\b/i.test(product)) return AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA;
  if (/^AMD\b/i.test(product)) return AcceleratorVendor.ACCELERATOR_VENDOR_AMD;
  if (/^(Ascend|910|310)/i.test(product)) return AcceleratorVendor.ACCELERATOR_VENDOR_ASCEND;
  return undefined;
}

/** "3g.40gb", "3g.40gb@4" or {profile, start} → a request carrying its field path. */
function readPartitions(list: unknown[], path: string, issues: Issues): MigRequest[] {
  const requests: MigRequest[] = [];
  list.forEach((item, i) => {
    const itemPath = childPath(path, i);
    if (typeof item === 'string') {
      const match = /^\s*([^@\s]+)\s*(?:@\s*(\d+))?\s*$/.exec(item);
      if (!match) issues.expected(itemPath, 'a MIG profile such as "3g.40gb" or "3g.40gb@4"', item);
      else requests.push({ profile: match[1], start: match[2] !== undefined ? Number(match[2]) : undefined, path: itemPath });
      return;
    }
    const p = FieldReader.of(item, itemPath, issues, PARTITION_FIELDS);
    if (!p) return;
    p.required('profile', 'a MIG profile such as "3g.40gb"');
    const profile = p.string('profile');
    const start = p.nonNegativeInteger('start');
    if (profile !== undefined) requests.push({ profile, start, path: itemPath });
  });
  return requests;
}

function resolveMig(
  f: FieldReader,
  spec: { product: string; memoryMib: number; count: number; vendor: AcceleratorVendor; migCapable: boolean },
): Pick<FleetAccelerators, 'migCapable' | 'migEnabled' | 'migLayouts'> {
  const off = { migCapable: spec.migCapable, migEnabled: false, migLayouts: Array.from({ length: spec.count }, () => []) };
  const m = f.mapping('mig', MIG_FIELDS);
  if (!m) return off;
  const issues = m.issues;
  const capable = m.boolean('capable') ?? spec.migCapable;
  const partitionsList = m.list('partitions');
  const gpusMap = m.has('gpus') ? m.value('gpus') : undefined;
  const explicit = m.boolean('enabled');
  const enabled = explicit ?? (partitionsList !== undefined || gpusMap !== undefined);
  if (!enabled) {
    if (partitionsList || gpusMap) issues.add(m.at(partitionsList ? 'partitions' : 'gpus'), 'partitions need mig.enabled: true');
    return { ...off, migCapable: capable };
  }
  if (spec.vendor !== AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA || !capable) {
    issues.add(m.at('enabled'), `${JSON.stringify(spec.product)} does not support MIG (set mig.capable: true if it does)`);
    return off;
  }
  const geometry = migGeometryForMemory(spec.memoryMib);
  if (!geometry) {
    const known = migMemoryClassesGb().join(', ').replace(/, (\d+)$/, ' and $1');
    issues.add(m.path, `no MIG geometry is known for a GPU with ${spec.memoryMib} MiB; known: ${known} GB classes`);
    return off;
  }

  const perGpu = new Map<number, MigRequest[]>();
  if (gpusMap !== undefined) {
    if (!isMapping(gpusMap)) {
      issues.expected(m.at('gpus'), 'a mapping of GPU index to a list of partitions', gpusMap);
    } else {
      for (const [key, value] of Object.entries(gpusMap)) {
        const path = childPath(m.at('gpus'), key);
        const index = Number(key);
        if (!/^\d+$/.test(key) || index >= spec.count) {
          issues.expected(path, `a GPU index from 0 to ${spec.count - 1}`, key);
        } else if (!Array.isArray(value)) {
          issues.expected(path, 'a list of partitions', value);
        } else {
          perGpu.set(index, readPartitions(value, path, issues));
        }
      }
    }
  }
  const shared = partitionsList ? readPartitions(partitionsList, m.at('partitions'), issues) : [];

  // The shared layout is placed once, so a problem in it is reported once, not per GPU.
  const place = (requests: MigRequest[], label: string): MigPartition[] => {
    const result = placeMigPartitions(requests, geometry, spec.memoryMib, label);
    if ('problem' in result) {
      issues.add(result.problem.path, result.problem.message);
      return [];
    }
    return result.partitions;
  };
  const sharedLayout = place(shared, 'each GPU');
  const migLayouts = Array.from({ length: spec.count }, (_, i) => {
    const own = perGpu.get(i);
    return own ? place(own, `GPU ${i}`) : sharedLayout.map((p) => ({ ...p }));
  });
  return { migCapable: true, migEnabled: true, migLayouts };
}

export function resolveAccelerators(node: FieldReader): FleetAccelerators | undefined {
  const a = node.mapping('accelerators', ACCELERATOR_FIELDS);
  if (!a) return undefined;
  const issues = a.issues;
  // A CPU-only node simply has no accelerators section.
  a.required('count', 'a positive integer');
  const count = a.positiveInteger('count');
  a.required('product', 'a product name as the vendor tool prints it, such as "NVIDIA H100 80GB HBM3"');
  const product = a.string('product');
  const catalog = product !== undefined ? lookupAccelerator(product) : undefined;
  const vendor = a.oneOf('vendor', VENDORS) ?? catalog?.vendor ?? (product !== undefined ? inferVendor(product) : undefined);
  if (vendor === undefined && product !== undefined && !a.has('vendor')) {
    issues.add(a.at('vendor'), `expected one of ${Object.keys(VENDORS).join(', ')} (${JSON.stringify(product)} is not in the built-in catalog), got nothing`);
  }
  const memoryMib = readMemoryMib(a, 'memoryMib', 'memoryGib') ?? catalog?.memoryMib;
  if (memoryMib === undefined && product !== undefined && !a.has('memoryGib')) {
    issues.add(a.at('memoryMib'), `expected a positive integer (MiB per accelerator; ${JSON.stringify(product)} is not in the built-in catalog), got nothing`);
  }
  const interconnect = a.oneOf('interconnect', INTERCONNECTS) ?? catalog?.interconnect ?? 'pcie';
  const requiredVendor = INTERCONNECT_VENDOR[interconnect];
  if (requiredVendor !== undefined && vendor !== undefined && vendor !== requiredVendor && a.has('interconnect')) {
    issues.add(a.at('interconnect'), `${interconnect} does not connect ${Object.keys(VENDORS).find((k) => VENDORS[k] === vendor)} accelerators; expected pcie or the vendor's own link`);
  }
  const nvlinksGiven = a.positiveInteger('nvlinks');
  if (nvlinksGiven !== undefined && interconnect !== 'nvlink') {
    issues.add(a.at('nvlinks'), `only applies to interconnect: nvlink, but interconnect is ${interconnect}`);
  }
  const gpusPerPcieSwitch = a.positiveInteger('gpusPerPcieSwitch') ?? 1;
  const powerLimitWatts = a.positiveNumber('powerLimitWatts') ?? catalog?.powerLimitWatts;
  const computeCapability = a.string('computeCapability') ?? catalog?.computeCapability;
  const family = (a.string('family') ?? catalog?.family ?? '').toLowerCase();
  if (count === undefined || product === undefined || vendor === undefined || memoryMib === undefined) return undefined;

  const mig = resolveMig(a, { product, memoryMib, count, vendor, migCapable: catalog?.migCapable ?? false });
  return {
    vendor,
    product,
    family,
    memoryMib,
    ...(computeCapability !== undefined ? { computeCapability } : {}),
    count,
    interconnect,
    ...(interconnect === 'nvlink' ? { nvlinks: nvlinksGiven ?? catalog?.nvlinks ?? 18 } : {}),
    gpusPerPcieSwitch,
    ...(powerLimitWatts !== undefined ? { powerLimitWatts } : {}),
    ...mig,
  };
}

