import { at, isJsonObject, scalarText, toolJson, type JsonObject } from '../shared/json-output';
import { ToolOutputError, measuredNumber, presentText, setIfPresent, sysfsPciAddress } from '../shared/tool-output';
import { meaningfulDriverVersion, meaningfulSerial, type AmdGpuRecord } from './amd-gpu-record';
import { normalizeGfxTarget } from './architecture';

const STATIC_TOOL = 'amd-smi static --json';
const LIST_TOOL = 'amd-smi list --json';

/**
 * Parses `amd-smi static --json`: a list of GPUs (ROCm 6.0–6.3) or `{"gpu_data": [...]}`
 * (amd-smi 25+). Quantities are `{"value": 196592, "unit": "MB"}` objects in both.
 * amd-smi's "MB" are MiB (the VRAM size of a 64 GiB MI210 prints as 65520 MB).
 */
export function parseAmdSmiStatic(text: string): AmdGpuRecord[] {
  return gpuEntries(STATIC_TOOL, toolJson(STATIC_TOOL, text)).map((entry, position) => {
    const index = gpuIndex(STATIC_TOOL, entry, position);
    const product =
      presentText(scalarText(at(entry, 'asic', 'market_name'))) ??
      presentText(scalarText(at(entry, 'board', 'product_name')));
    if (product === undefined) {
      throw new ToolOutputError(STATIC_TOOL, `GPU ${index} has no asic.market_name or board.product_name`);
    }
    const record: AmdGpuRecord = { index, product };
    setIfPresent(record, 'uuid', presentText(scalarText(entry['uuid'])));
    setIfPresent(record, 'pciBusId', sysfsPciAddress(scalarText(at(entry, 'bus', 'bdf'))));
    setIfPresent(record, 'gfxTarget', normalizeGfxTarget(scalarText(at(entry, 'asic', 'target_graphics_version'))));
    setIfPresent(record, 'memoryMib', mebibytes(STATIC_TOOL, index, 'vram.size', at(entry, 'vram', 'size')));
    setIfPresent(record, 'numaNode', wholeNumber(at(entry, 'numa', 'node')));
    setIfPresent(record, 'cpuAffinity', cpuAffinity(at(entry, 'numa', 'cpu_affinity')));
    // socket_power is the enforced cap; amd-smi before 6.1 printed only max_power, which then was the cap.
    setIfPresent(
      record,
      'powerLimitWatts',
      quantity(at(entry, 'limit', 'socket_power')) ?? quantity(at(entry, 'limit', 'max_power')),
    );
    setIfPresent(
      record,
      'serial',
      meaningfulSerial(scalarText(at(entry, 'asic', 'asic_serial'))) ??
        meaningfulSerial(scalarText(at(entry, 'board', 'product_serial'))),
    );
    setIfPresent(record, 'driverVersion', meaningfulDriverVersion(scalarText(at(entry, 'driver', 'version'))));
    return record;
  });
}

/** One line of `amd-smi list --json`: the identity amd-smi static leaves out. */
export interface AmdListedGpu {
  index: number;
  uuid?: string;
  pciBusId?: string;
}

/** Parses `amd-smi list --json`: `[{"gpu": 0, "bdf": "0000:05:00.0", "uuid": "...", ...}]`. */
export function parseAmdSmiList(text: string): AmdListedGpu[] {
  return gpuEntries(LIST_TOOL, toolJson(LIST_TOOL, text)).map((entry, position) => {
    const listed: AmdListedGpu = { index: gpuIndex(LIST_TOOL, entry, position) };
    setIfPresent(listed, 'uuid', presentText(scalarText(entry['uuid'])));
    setIfPresent(listed, 'pciBusId', sysfsPciAddress(scalarText(entry['bdf'])));
    return listed;
  });
}

function gpuEntries(tool: string, document: unknown): JsonObject[] {
  const list = Array.isArray(document) ? document : at(document, 'gpu_data');
  if (!Array.isArray(list)) {
    throw new ToolOutputError(tool, 'expected a list of GPUs or an object with a "gpu_data" list');
  }
  return list.map((entry, position) => {
    if (!isJsonObject(entry)) throw new ToolOutputError(tool, `GPU entry ${position} is not an object`);
    return entry;
  });
}

function gpuIndex(tool: string, entry: JsonObject, position: number): number {
  const index = wholeNumber(entry['gpu']);
  if (index === undefined) throw new ToolOutputError(tool, `GPU entry ${position} has no "gpu" index`);
  return index;
}

function wholeNumber(value: unknown): number | undefined {
  const number = measuredNumber(scalarText(value));
  return number !== undefined && Number.isInteger(number) && number >= 0 ? number : undefined;
}

/** `{"value": 300, "unit": "W"}`, `"300 W"` or `300` as a number; undefined for N/A. */
function quantity(value: unknown): number | undefined {
  const number = measuredNumber(scalarText(isJsonObject(value) ? value['value'] : value));
  return number === undefined || Number.isNaN(number) ? undefined : number;
}

const MIB_PER_UNIT: Readonly<Record<string, number>> = {
  B: 1 / 1048576,
  KB: 1 / 1024,
  MB: 1,
  MIB: 1,
  GB: 1024,
  GIB: 1024,
};

function mebibytes(tool: string, index: number, field: string, value: unknown): number | undefined {
  const amount = quantity(value);
  if (amount === undefined) return undefined;
  const unitText = isJsonObject(value) ? scalarText(value['unit']) : /[A-Za-z]+$/.exec(scalarText(value) ?? '')?.[0];
  const perUnit = MIB_PER_UNIT[(unitText ?? 'MB').toUpperCase()];
  if (perUnit === undefined) throw new ToolOutputError(tool, `GPU ${index} ${field} has unit "${unitText}"`);
  return Math.round(amount * perUnit);
}

/** amd-smi 25+ lists the CPUs near the GPU per socket: `{"cpu_list_0": {"cpu_cores_affinity": "0-63"}, ...}`. */
function cpuAffinity(value: unknown): string | undefined {
  if (!isJsonObject(value)) return undefined;
  const lists = Object.values(value)
    .map((list) => presentText(scalarText(at(list, 'cpu_cores_affinity'))))
    .filter((list): list is string => list !== undefined);
  return lists.length > 0 ? lists.join(',') : undefined;
}
