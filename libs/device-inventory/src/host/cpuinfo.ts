import { describeArmCore } from './arm-cpu';

/** What /proc/cpuinfo alone tells; fields it cannot answer are left for sysfs to fill. */
export interface CpuinfoFacts {
  vendor?: string;
  model?: string;
  logicalCpus: number;
  sockets?: number;
  /** Physical cores across all sockets. */
  cores?: number;
}

type Block = Map<string, string>;

function parseBlocks(text: string): Block[] {
  const blocks: Block[] = [];
  let current: Block = new Map();
  for (const line of text.split('\n')) {
    if (line.trim() === '') {
      if (current.size > 0) blocks.push(current);
      current = new Map();
      continue;
    }
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    current.set(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
  }
  if (current.size > 0) blocks.push(current);
  return blocks;
}

/**
 * Parses x86_64, aarch64 and ppc64le /proc/cpuinfo. Sockets and cores come from the
 * physical id/core id pairs when the kernel prints them (x86), which is exact even when
 * SMT is off on some cores; otherwise they stay undefined.
 */
export function parseCpuinfo(text: string): CpuinfoFacts {
  // Trailing blocks without "processor" (e.g. "Hardware"/"Serial" on some ARM boards) are not CPUs.
  const processors = parseBlocks(text).filter((b) => b.has('processor'));
  const first = processors[0];
  const facts: CpuinfoFacts = { logicalCpus: processors.length };
  if (!first) return facts;

  const modelName = first.get('model name') ?? first.get('cpu');
  const vendorId = first.get('vendor_id');
  if (vendorId) facts.vendor = vendorId;
  if (modelName) facts.model = modelName.replace(/\s+/g, ' ');
  if (!vendorId || !modelName) {
    const arm = describeArmCore(first.get('CPU implementer'), first.get('CPU part'));
    if (arm) {
      facts.vendor ??= arm.vendor;
      facts.model ??= arm.model;
    }
  }

  const packages = new Set<string>();
  const cores = new Set<string>();
  for (const block of processors) {
    const pkg = block.get('physical id');
    const core = block.get('core id');
    if (pkg !== undefined) packages.add(pkg);
    if (pkg !== undefined && core !== undefined) cores.add(`${pkg}/${core}`);
  }
  if (packages.size > 0) facts.sockets = packages.size;
  if (cores.size > 0) {
    facts.cores = cores.size;
  } else {
    const perSocket = Number.parseInt(first.get('cpu cores') ?? '', 10);
    if (perSocket > 0 && facts.sockets) facts.cores = perSocket * facts.sockets;
  }
  return facts;
}
