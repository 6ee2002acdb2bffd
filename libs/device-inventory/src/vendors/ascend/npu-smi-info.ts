import { ToolOutputError, measuredNumber, outputLines, setIfPresent, sysfsPciAddress } from '../shared/tool-output';

/** One chip of `npu-smi info`: the device the Ascend runtime schedules on. */
export interface AscendChipRecord {
  /**
   * Device index as ASCEND_RT_VISIBLE_DEVICES counts it: the Phy-ID / Device column where the
   * table has one (cards with two chips), else the NPU id (one chip per card, e.g. 910B).
   */
  index: number;
  npuId: number;
  chipId: number;
  /** As npu-smi prints it: "910B3", "310P3", "Ascend910". */
  name: string;
  /** "OK", "Warning", "Alarm", "Critical". */
  health: string;
  powerWatts?: number;
  temperatureCelsius?: number;
  /** AI Core utilization. */
  utilizationPercent?: number;
  /** MiB: HBM where the chip has it (910), else its DDR (310P). */
  memoryMib?: number;
  /** MiB */
  memoryUsedMib?: number;
  /** sysfs form, e.g. "0000:c1:00.0" */
  pciBusId?: string;
}

export interface NpuSmiInfo {
  /** The npu-smi (driver) version from the banner, e.g. "24.1.0.3". */
  version?: string;
  chips: AscendChipRecord[];
}

const TOOL = 'npu-smi info';
const BUS_ID = /^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$/i;
const USAGE = /(\d+(?:\.\d+)?)\s*\/\s*(\d+(?:\.\d+)?)/g;

/**
 * Parses the device table of `npu-smi info`. Each chip takes two rows:
 *
 *     | 0     910B3               | OK            | 94.7        54                0    / 0             |
 *     | 0                         | 0000:C1:00.0  | 0           0    / 0          3396 / 65536         |
 *
 * the first "NPU Name | Health | Power Temp Hugepages", the second "Chip [Phy-ID] | Bus-Id |
 * AICore Memory-Usage [HBM-Usage]". Column widths differ between releases, so rows are read by
 * their `|` cells. The process table that follows is not read.
 */
export function parseNpuSmiInfo(text: string): NpuSmiInfo {
  const lines = outputLines(text);
  const headerAt = lines.findIndex((line) => /^\|\s*NPU\s+Name\s*\|/.test(line.trim()));
  if (headerAt < 0) throw new ToolOutputError(TOOL, 'no "| NPU   Name | Health |" table header found');

  const info: NpuSmiInfo = { chips: [] };
  setIfPresent(info, 'version', /npu-smi\s+\S+\s+Version:\s*(\S+)/.exec(text)?.[1]);

  let pending: { npuId: number; name: string; health: string; cells: string[]; lineNumber: number } | undefined;
  for (let at = headerAt + 1; at < lines.length; at++) {
    const line = lines[at].trim();
    const lineNumber = at + 1;
    if (!line.startsWith('|')) continue; // borders: +----+, +====+
    if (/Process id|Process name/i.test(line)) break;
    const cells = line.replace(/^\|/, '').replace(/\|$/, '').split('|').map((cell) => cell.trim());
    if (/^Chip\b/.test(cells[0])) continue; // second header row
    if (cells.length !== 3) {
      throw new ToolOutputError(TOOL, `expected 3 "|" cells, found ${cells.length}: "${line}"`, lineNumber);
    }

    if (BUS_ID.test(cells[1])) {
      if (pending === undefined) {
        throw new ToolOutputError(TOOL, `chip row without the NPU row above it: "${line}"`, lineNumber);
      }
      info.chips.push(chipRecord(pending, cells, lineNumber));
      pending = undefined;
      continue;
    }
    const npu = /^(\d+)\s+(\S+)$/.exec(cells[0]);
    if (!npu || pending !== undefined) {
      throw new ToolOutputError(TOOL, `expected an "NPU Name | Health" row or its chip row, got "${line}"`, lineNumber);
    }
    pending = { npuId: Number(npu[1]), name: npu[2], health: cells[1], cells, lineNumber };
  }
  if (pending !== undefined) {
    throw new ToolOutputError(TOOL, `NPU ${pending.npuId} has no chip row`, pending.lineNumber);
  }
  return info;
}

function chipRecord(
  npu: { npuId: number; name: string; health: string; cells: string[]; lineNumber: number },
  cells: string[],
  lineNumber: number,
): AscendChipRecord {
  const ids = cells[0].split(/\s+/).map(Number);
  if (ids.length < 1 || ids.length > 2 || ids.some((id) => !Number.isInteger(id))) {
    throw new ToolOutputError(TOOL, `chip cell is "${cells[0]}", expected "<chip> [<device>]"`, lineNumber);
  }
  const [chipId, deviceId] = ids;
  const [power, temperature] = npu.cells[2].split(/\s+/);
  const [aiCore] = cells[2].split(/\s+/);
  const usages = [...cells[2].matchAll(USAGE)].map((match) => ({ used: Number(match[1]), total: Number(match[2]) }));
  // The last pair is HBM on 910-class chips and the only pair (DDR) on 310P; a 0 total means none.
  const memory = [...usages].reverse().find((usage) => usage.total > 0);

  const record: AscendChipRecord = {
    index: deviceId ?? npu.npuId,
    npuId: npu.npuId,
    chipId,
    name: npu.name,
    health: npu.health,
  };
  setIfPresent(record, 'powerWatts', reading(power, 'Power(W)', npu.lineNumber));
  setIfPresent(record, 'temperatureCelsius', reading(temperature, 'Temp(C)', npu.lineNumber));
  setIfPresent(record, 'utilizationPercent', reading(aiCore, 'AICore(%)', lineNumber));
  setIfPresent(record, 'memoryMib', memory?.total);
  setIfPresent(record, 'memoryUsedMib', memory?.used);
  setIfPresent(record, 'pciBusId', sysfsPciAddress(cells[1]));
  return record;
}

/** A number, or undefined for the "-" / "NA" npu-smi prints for a chip that shares its card's reading. */
function reading(raw: string | undefined, column: string, lineNumber: number): number | undefined {
  const value = measuredNumber(raw);
  if (Number.isNaN(value)) throw new ToolOutputError(TOOL, `${column} is "${raw}", not a number`, lineNumber);
  return value;
}
