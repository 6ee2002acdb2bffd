import { promises as fs } from 'node:fs';
import type { Cpu, Memory } from '@gpufleet/contracts';
import { machineArchitecture } from './architecture';
import { parseCpuinfo } from './cpuinfo';
import { parseMeminfo } from './meminfo';
import { osIdentity } from './os-release';
import { hostPath, listOptionalDir, readOptionalText } from './sysfs';

/** The node facts that are not devices: what the host provider (or a simulated node) reports. */
export interface HostInfo {
  cpu: Cpu;
  memory: Memory;
  /** e.g. "linux/ubuntu-22.04" */
  os: string;
  /** e.g. "5.15.0-105-generic" */
  kernel: string;
  /** GiB */
  localStorageGib: number;
}

/** Anything that can say what the node's host looks like: the real host, or a simulated node. */
export interface HostInfoSource {
  readHostInfo(): Promise<HostInfo>;
}

export interface HostReadOptions {
  /**
   * Filesystem whose size is reported as local storage, as the agent sees it (so under the
   * host mount when there is one). Defaults to the root itself.
   */
  storagePath?: string;
  /** `process.arch` value; injectable so tests do not depend on the machine running them. */
  nodeArch?: string;
}

async function countNumaNodes(root: string): Promise<number> {
  const entries = await listOptionalDir(hostPath(root, '/sys/devices/system/node'));
  const nodes = entries.filter((e) => /^node\d+$/.test(e)).length;
  // Kernels built without NUMA have no node directory: the whole machine is one node.
  return Math.max(1, nodes);
}

/** Sockets and cores from sysfs CPU topology, for cpuinfo formats (aarch64) that do not carry them. */
async function sysfsTopology(root: string): Promise<{ sockets: number; cores: number } | undefined> {
  const cpuDir = hostPath(root, '/sys/devices/system/cpu');
  const cpus = (await listOptionalDir(cpuDir)).filter((e) => /^cpu\d+$/.test(e));
  const packages = new Set<string>();
  const cores = new Set<string>();
  for (const cpu of cpus) {
    const pkg = (await readOptionalText(`${cpuDir}/${cpu}/topology/physical_package_id`))?.trim();
    const core = (await readOptionalText(`${cpuDir}/${cpu}/topology/core_id`))?.trim();
    if (pkg === undefined || core === undefined) continue;
    packages.add(pkg);
    cores.add(`${pkg}/${core}`);
  }
  return packages.size > 0 ? { sockets: packages.size, cores: cores.size } : undefined;
}

export async function readCpu(root: string, nodeArch?: string): Promise<Cpu> {
  const text = await readOptionalText(hostPath(root, '/proc/cpuinfo'));
  if (text === undefined) throw new Error(`cannot read CPU facts: ${hostPath(root, '/proc/cpuinfo')} does not exist`);
  const facts = parseCpuinfo(text);
  if (facts.logicalCpus === 0) throw new Error('/proc/cpuinfo lists no processor');
  let { sockets, cores } = facts;
  if (sockets === undefined || cores === undefined) {
    const topology = await sysfsTopology(root);
    sockets ??= topology?.sockets ?? 1;
    cores ??= topology?.cores ?? facts.logicalCpus;
  }
  return {
    vendor: facts.vendor ?? 'unknown',
    model: facts.model ?? 'unknown',
    architecture: machineArchitecture(nodeArch),
    sockets,
    cores,
    logicalCpus: facts.logicalCpus,
    numaNodes: await countNumaNodes(root),
  };
}

export async function readMemory(root: string): Promise<Memory> {
  const file = hostPath(root, '/proc/meminfo');
  const text = await readOptionalText(file);
  if (text === undefined) throw new Error(`cannot read memory facts: ${file} does not exist`);
  return parseMeminfo(text);
}

/** Size of the filesystem holding `path`, GiB (rounded down); 0 when it cannot be measured. */
export async function localStorageGib(path: string): Promise<number> {
  try {
    const stats = await fs.statfs(path);
    return Math.floor((Number(stats.blocks) * Number(stats.bsize)) / 1024 ** 3);
  } catch {
    return 0;
  }
}

/** /etc/os-release, or /usr/lib/os-release which it normally links to (os-release(5)). */
async function readOsRelease(root: string): Promise<string | undefined> {
  return (
    (await readOptionalText(hostPath(root, '/etc/os-release'))) ??
    (await readOptionalText(hostPath(root, '/usr/lib/os-release')))
  );
}

/** Reads CPU, memory, OS, kernel and local storage from a host tree mounted at `root` (default "/"). */
export async function readHostInfo(root = '/', options: HostReadOptions = {}): Promise<HostInfo> {
  // CPU first: when /proc is not mounted, the error names /proc/cpuinfo whatever finishes first.
  const cpu = await readCpu(root, options.nodeArch);
  const [memory, osRelease, kernel, storage] = await Promise.all([
    readMemory(root),
    readOsRelease(root),
    readOptionalText(hostPath(root, '/proc/sys/kernel/osrelease')),
    localStorageGib(options.storagePath ?? root),
  ]);
  return { cpu, memory, os: osIdentity(osRelease), kernel: kernel?.trim() ?? '', localStorageGib: storage };
}
