import {
  ToolOutputError,
  measuredNumber,
  outputLines,
  presentText,
  setIfPresent as assign,
  sysfsPciAddress,
} from '../shared/tool-output';

/**
 * The fields the NVIDIA provider asks `nvidia-smi --query-gpu=<fields> --format=csv` for.
 * The CSV keeps its header so columns are found by name: older drivers reject some fields
 * (compute_cap arrived in R510) and the provider then asks again without them.
 */
export const NVIDIA_QUERY_GPU_FIELDS = [
  'index',
  'uuid',
  'name',
  'memory.total',
  'memory.used',
  'pci.bus_id',
  'driver_version',
  'compute_cap',
  'mig.mode.current',
  'utilization.gpu',
  'temperature.gpu',
  'power.limit',
  'serial',
] as const;

export type NvidiaQueryGpuField = (typeof NVIDIA_QUERY_GPU_FIELDS)[number];

/** One row of the query: what nvidia-smi could read, absent where it printed a placeholder. */
export interface NvidiaGpuRecord {
  index: number;
  /** Empty when the column was not queried or printed a placeholder. */
  uuid: string;
  name: string;
  /** MiB */
  memoryTotalMib?: number;
  /** MiB */
  memoryUsedMib?: number;
  /** sysfs form, e.g. "0000:1b:00.0" */
  pciBusId?: string;
  driverVersion?: string;
  /** e.g. "9.0"; absent on drivers before R510, which do not know the field. */
  computeCapability?: string;
  /** Absent when the GPU cannot do MIG (nvidia-smi prints [N/A]). */
  migMode?: 'enabled' | 'disabled';
  utilizationPercent?: number;
  temperatureCelsius?: number;
  powerLimitWatts?: number;
  serial?: string;
}

const TOOL = 'nvidia-smi --query-gpu';

/** nvidia-smi prints this, and nothing else, when the driver sees no GPU. */
export function saysNoDevicesFound(text: string): boolean {
  return /No devices were found/i.test(text);
}

/**
 * Parses `nvidia-smi --query-gpu=... --format=csv` (header kept; units in values optional, so
 * `csv,nounits` parses too). Columns are mapped by header name, never by position.
 * Throws a ToolOutputError naming the line when a row does not fit the header.
 */
export function parseNvidiaQueryGpu(csv: string): NvidiaGpuRecord[] {
  if (saysNoDevicesFound(csv)) return [];
  const lines = outputLines(csv);
  let columns: string[] | undefined;
  const records: NvidiaGpuRecord[] = [];

  lines.forEach((line, offset) => {
    const lineNumber = offset + 1;
    // nvidia-smi writes driver warnings (e.g. "WARNING: infoROM is corrupted at gpu ...") to stdout.
    if (line.trim() === '' || /^WARNING:/i.test(line.trim())) return;
    const cells = line.split(',').map((cell) => cell.trim());
    if (columns === undefined) {
      columns = cells.map(headerName);
      for (const required of ['index', 'name'] as const) {
        if (!columns.includes(required)) {
          throw new ToolOutputError(
            TOOL,
            `header has no "${required}" column (expected --format=csv with its header, got "${line.trim()}")`,
            lineNumber,
          );
        }
      }
      return;
    }
    if (cells.length !== columns.length) {
      throw new ToolOutputError(
        TOOL,
        `expected ${columns.length} comma-separated values as in the header, found ${cells.length}: "${line.trim()}"`,
        lineNumber,
      );
    }
    records.push(gpuRecord(columns, cells, lineNumber));
  });

  if (columns === undefined) throw new ToolOutputError(TOOL, 'output is empty; expected a CSV header');
  return records;
}

/** "memory.total [MiB]" -> "memory.total" */
function headerName(cell: string): string {
  return cell.replace(/\s*\[[^\]]*\]\s*$/, '').trim();
}

function gpuRecord(columns: string[], cells: string[], lineNumber: number): NvidiaGpuRecord {
  const value = (field: NvidiaQueryGpuField): string | undefined => {
    const at = columns.indexOf(field);
    return at < 0 ? undefined : cells[at];
  };
  const numberOf = (field: NvidiaQueryGpuField): number | undefined => {
    const parsed = measuredNumber(value(field));
    if (Number.isNaN(parsed)) {
      throw new ToolOutputError(TOOL, `${field} is "${value(field)}", not a number`, lineNumber);
    }
    return parsed;
  };

  const index = numberOf('index');
  if (index === undefined || !Number.isInteger(index) || index < 0) {
    throw new ToolOutputError(TOOL, `index is "${value('index')}", not a GPU index`, lineNumber);
  }
  const name = presentText(value('name'));
  if (name === undefined) throw new ToolOutputError(TOOL, `GPU ${index} has no name`, lineNumber);

  const record: NvidiaGpuRecord = { index, uuid: presentText(value('uuid')) ?? '', name };
  assign(record, 'memoryTotalMib', roundMib(numberOf('memory.total')));
  assign(record, 'memoryUsedMib', roundMib(numberOf('memory.used')));
  assign(record, 'pciBusId', sysfsPciAddress(value('pci.bus_id')));
  assign(record, 'driverVersion', presentText(value('driver_version')));
  assign(record, 'computeCapability', presentText(value('compute_cap')));
  assign(record, 'migMode', migMode(value('mig.mode.current'), lineNumber));
  assign(record, 'utilizationPercent', numberOf('utilization.gpu'));
  assign(record, 'temperatureCelsius', numberOf('temperature.gpu'));
  assign(record, 'powerLimitWatts', numberOf('power.limit'));
  assign(record, 'serial', presentText(value('serial')));
  return record;
}

function migMode(raw: string | undefined, lineNumber: number): NvidiaGpuRecord['migMode'] {
  const value = presentText(raw);
  if (value === undefined) return undefined;
  if (/^enabled$/i.test(value)) return 'enabled';
  if (/^disabled$/i.test(value)) return 'disabled';
  throw new ToolOutputError(TOOL, `mig.mode.current is "${value}", expected Enabled, Disabled or [N/A]`, lineNumber);
}

function roundMib(value: number | undefined): number | undefined {
  return value === undefined ? undefined : Math.round(value);
}

/** Pulls the field name out of nvidia-smi's `Field "compute_cap" is not a valid field to query.` */
export function rejectedQueryField(message: string): string | undefined {
  return /Field "([^"]+)" is not a valid field to query/i.exec(message)?.[1];
}
