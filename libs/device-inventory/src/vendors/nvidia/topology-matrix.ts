import { LinkType, type DeviceLink } from '@gpufleet/contracts';
import { ToolOutputError, isAbsentValue, outputLines } from '../shared/tool-output';

/** Where one GPU sits relative to the CPUs, from the matrix's affinity columns. */
export interface NvidiaGpuPlacement {
  index: number;
  /** CPU list, e.g. "0-47,96-143". */
  cpuAffinity?: string;
  /** The NUMA node nearest the GPU (the "NUMA Affinity" column). */
  numaNode?: number;
}

/** What `nvidia-smi topo -m` says about a node. */
export interface NvidiaTopology {
  /**
   * One link per unordered pair of devices in the matrix, GPU–GPU, GPU–NIC and NIC–NIC.
   * GPUs are named by accelerator id ("nvidia-3"), NICs by device name ("mlx5_0").
   */
  links: DeviceLink[];
  gpus: NvidiaGpuPlacement[];
}

const TOOL = 'nvidia-smi topo -m';
const AFFINITY_COLUMNS = ['CPU Affinity', 'NUMA Affinity', 'GPU NUMA ID'] as const;
type AffinityColumn = (typeof AFFINITY_COLUMNS)[number];
/** Header cells: the multi-word affinity titles first, then any single word. */
const HEADER_CELL = /CPU Affinity|NUMA Affinity|GPU NUMA ID|\S+/g;
const CONNECTION_CELL = /^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)$/;
/** Terminals underline the header; captured output keeps the escapes. */
const ANSI_ESCAPE = /\x1b\[[0-9;]*m/g;

/** The accelerator id the NVIDIA provider gives GPU `index`. */
export function nvidiaAcceleratorId(index: number): string {
  return `nvidia-${index}`;
}

/**
 * Parses the matrix of `nvidia-smi topo -m`. Works on the raw tab-separated output and on copies
 * whose tabs became spaces; reads the `NIC Legend:` (drivers R470+) and the older layout that uses
 * NIC names (mlx5_0) as column titles. Throws a ToolOutputError naming the line when a row does
 * not fit the header or a cell is not a known connection type.
 */
export function parseNvidiaTopology(text: string): NvidiaTopology {
  const lines = outputLines(text).map((line) => line.replace(ANSI_ESCAPE, ''));
  const headerAt = lines.findIndex(isMatrixHeader);
  if (headerAt < 0) {
    throw new ToolOutputError(TOOL, 'no matrix header (a line naming GPU0 GPU1 ... CPU Affinity) found');
  }
  const headerCells = lines[headerAt].match(HEADER_CELL) ?? [];
  const firstAffinity = headerCells.findIndex((cell) => (AFFINITY_COLUMNS as readonly string[]).includes(cell));
  const devices = firstAffinity < 0 ? headerCells : headerCells.slice(0, firstAffinity);
  const affinityColumns = (firstAffinity < 0 ? [] : headerCells.slice(firstAffinity)) as AffinityColumn[];
  const nicNames = nicLegend(lines);

  const deviceName = (label: string): string => {
    const gpu = /^GPU(\d+)$/.exec(label);
    if (gpu) return nvidiaAcceleratorId(Number(gpu[1]));
    return nicNames.get(label) ?? label;
  };

  const links = new Map<string, DeviceLink>();
  const gpus: NvidiaGpuPlacement[] = [];
  for (let at = headerAt + 1; at < lines.length; at++) {
    const line = lines[at];
    const lineNumber = at + 1;
    if (/^\s*Legend:/.test(line)) break;
    if (line.trim() === '') continue;
    const tokens = line.trim().split(/\s+/);
    const label = tokens[0];
    if (!devices.includes(label)) {
      throw new ToolOutputError(TOOL, `row "${label}" is not a device named in the header`, lineNumber);
    }
    const cells = tokens.slice(1, 1 + devices.length);
    if (cells.length < devices.length) {
      throw new ToolOutputError(
        TOOL,
        `row ${label} has ${cells.length} connection cells, the header names ${devices.length} devices`,
        lineNumber,
      );
    }
    cells.forEach((cell, column) => {
      const other = devices[column];
      if (other === label) return;
      const link = connection(cell, lineNumber, label, other);
      if (link === undefined) return;
      const a = deviceName(label);
      const b = deviceName(other);
      const key = [a, b].sort().join('\u0000');
      if (!links.has(key)) links.set(key, { a, b, ...link });
    });

    const gpu = /^GPU(\d+)$/.exec(label);
    if (gpu) {
      gpus.push(placement(Number(gpu[1]), tokens.slice(1 + devices.length), affinityColumns, lineNumber));
    }
  }
  return { links: [...links.values()], gpus };
}

/** The header names devices and affinity columns only; every row holds connection cells. */
function isMatrixHeader(line: string): boolean {
  const cells = line.match(HEADER_CELL) ?? [];
  return cells.some((cell) => /^GPU\d+$/.test(cell)) && !cells.some((cell) => CONNECTION_CELL.test(cell));
}

/** `NIC0: mlx5_0` lines of the legend, by label. */
function nicLegend(lines: string[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const line of lines) {
    const entry = /^\s*(NIC\d+):\s*(\S+)\s*$/.exec(line);
    if (entry) names.set(entry[1], entry[2]);
  }
  return names;
}

/** Maps a matrix cell to a link; undefined for the diagonal and for cells with no reading. */
function connection(
  cell: string,
  lineNumber: number,
  row: string,
  column: string,
): Pick<DeviceLink, 'type' | 'nvlinks'> | undefined {
  if (cell === 'X' || isAbsentValue(cell)) return undefined;
  const nvlink = /^NV(\d+)$/.exec(cell);
  if (nvlink) return { type: LinkType.LINK_TYPE_NVLINK, nvlinks: Number(nvlink[1]) };
  switch (cell) {
    case 'PIX':
      return { type: LinkType.LINK_TYPE_PIX };
    case 'PXB':
      return { type: LinkType.LINK_TYPE_PXB };
    case 'PHB':
      return { type: LinkType.LINK_TYPE_PHB };
    case 'NODE':
      return { type: LinkType.LINK_TYPE_NODE };
    case 'SYS':
    case 'SOC': // drivers before R384 called the inter-socket path SOC
      return { type: LinkType.LINK_TYPE_SYS };
    default:
      throw new ToolOutputError(TOOL, `${row}→${column} is "${cell}", not a known connection type`, lineNumber);
  }
}

/**
 * Reads the affinity cells after the matrix. Their count can fall short of the columns: under a
 * cgroup that hides the GPU's CPUs (a Slurm step), "CPU Affinity" prints nothing while "NUMA
 * Affinity" and "GPU NUMA ID" still do, so the cells are matched to the columns from the right.
 */
function placement(
  index: number,
  cells: string[],
  columns: AffinityColumn[],
  lineNumber: number,
): NvidiaGpuPlacement {
  if (cells.length > columns.length) {
    throw new ToolOutputError(
      TOOL,
      `GPU${index} has ${cells.length} values after the matrix, the header names ${columns.length} affinity columns`,
      lineNumber,
    );
  }
  const valueOf = (column: AffinityColumn): string | undefined => {
    const at = columns.indexOf(column);
    if (at < 0) return undefined;
    const fromRight = columns.length - at;
    return cells[cells.length - fromRight];
  };
  const result: NvidiaGpuPlacement = { index };
  const cpus = valueOf('CPU Affinity');
  if (cpus !== undefined && !isAbsentValue(cpus)) {
    if (!/^\d+(-\d+)?(,\d+(-\d+)?)*$/.test(cpus)) {
      throw new ToolOutputError(TOOL, `GPU${index} CPU Affinity is "${cpus}", not a CPU list`, lineNumber);
    }
    result.cpuAffinity = cpus;
  }
  const numa = valueOf('NUMA Affinity');
  // A GPU close to several nodes prints a range ("0-1"); numa_node holds one node, so leave it absent.
  if (numa !== undefined && /^\d+$/.test(numa)) result.numaNode = Number(numa);
  return result;
}
