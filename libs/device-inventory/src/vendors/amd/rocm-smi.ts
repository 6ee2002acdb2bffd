import { LinkType, type DeviceLink } from '@gpufleet/contracts';
import { entryIgnoringCase, isJsonObject, scalarText, toolJson, type JsonObject } from '../shared/json-output';
import { ToolOutputError, measuredNumber, presentText, setIfPresent, sysfsPciAddress } from '../shared/tool-output';
import { meaningfulDriverVersion, meaningfulSerial, type AmdGpuRecord } from './amd-gpu-record';
import { normalizeGfxTarget } from './architecture';

/** The rocm-smi flags the AMD provider asks for when amd-smi is not there. */
export const ROCM_SMI_INVENTORY_ARGS = [
  '--showproductname',
  '--showmeminfo',
  'vram',
  '--showbus',
  '--showuniqueid',
  '--showserial',
  '--showdriverversion',
  '--json',
] as const;

export const ROCM_SMI_TOPOLOGY_ARGS = ['--showtopotype', '--json'] as const;

const CARDS_TOOL = 'rocm-smi --showproductname --json';
const TOPOLOGY_TOOL = 'rocm-smi --showtopotype --json';

/**
 * Parses rocm-smi's JSON: `{"card0": {"Card Series": ..., "VRAM Total Memory (B)": ...}, "system": {...}}`.
 * Key spelling changed across ROCm releases ("Card series" / "Card Series"), so keys match
 * case-insensitively.
 */
export function parseRocmSmiCards(text: string): AmdGpuRecord[] {
  const document = toolJson(CARDS_TOOL, text);
  if (!isJsonObject(document)) throw new ToolOutputError(CARDS_TOOL, 'expected an object keyed by card');
  const driverVersion = isJsonObject(document['system'])
    ? meaningfulDriverVersion(scalarText(entryIgnoringCase(document['system'], 'Driver version')))
    : undefined;

  return Object.entries(document)
    .filter(([key]) => /^card\d+$/.test(key))
    .map(([key, card]) => {
      const index = Number(key.slice('card'.length));
      if (!isJsonObject(card)) throw new ToolOutputError(CARDS_TOOL, `${key} is not an object`);
      const record: AmdGpuRecord = { index, product: productName(card, key) };
      const value = (name: string): string | undefined => presentText(scalarText(entryIgnoringCase(card, name)));
      setIfPresent(record, 'uuid', value('Unique ID'));
      setIfPresent(record, 'pciBusId', sysfsPciAddress(value('PCI Bus')));
      setIfPresent(record, 'gfxTarget', normalizeGfxTarget(value('GFX Version')));
      setIfPresent(record, 'memoryMib', bytesAsMib(value('VRAM Total Memory (B)'), key));
      setIfPresent(record, 'memoryUsedMib', bytesAsMib(value('VRAM Total Used Memory (B)'), key));
      setIfPresent(record, 'serial', meaningfulSerial(value('Serial Number')));
      setIfPresent(record, 'driverVersion', driverVersion);
      return record;
    })
    .sort((left, right) => left.index - right.index);
}

/**
 * "Card Series" names the product on every release; "Card Model" did on ROCm 5 and is a PCI
 * device id ("0x744c") since, so it is only a fallback when it reads like a name.
 */
function productName(card: JsonObject, key: string): string {
  const series = presentText(scalarText(entryIgnoringCase(card, 'Card Series')));
  const model = presentText(scalarText(entryIgnoringCase(card, 'Card Model')));
  const deviceName = presentText(scalarText(entryIgnoringCase(card, 'Device Name')));
  const product = series ?? (model !== undefined && !/^0x[0-9a-f]+$/i.test(model) ? model : undefined) ?? deviceName;
  if (product === undefined) {
    throw new ToolOutputError(CARDS_TOOL, `${key} has no "Card Series" (run with --showproductname)`);
  }
  return product;
}

function bytesAsMib(raw: string | undefined, key: string): number | undefined {
  const bytes = measuredNumber(raw);
  if (bytes === undefined) return undefined;
  if (Number.isNaN(bytes)) throw new ToolOutputError(CARDS_TOOL, `${key} VRAM is "${raw}", not a byte count`);
  return Math.floor(bytes / 1048576);
}

/**
 * Parses `rocm-smi --showtopotype --json`: `{"system": {"(Topology) Link type between DRM devices 0
 * and 1": "XGMI", ...}}`, one key per unordered pair. XGMI becomes LINK_TYPE_XGMI; PCIE, a path
 * through the host, LINK_TYPE_PHB. `accelerator` names a GPU index as the provider does.
 */
export function parseRocmSmiLinkTypes(text: string, accelerator: (index: number) => string): DeviceLink[] {
  const system = (() => {
    const document = toolJson(TOPOLOGY_TOOL, text);
    return isJsonObject(document) && isJsonObject(document['system']) ? document['system'] : undefined;
  })();
  if (system === undefined) throw new ToolOutputError(TOPOLOGY_TOOL, 'expected an object with a "system" section');

  const links = new Map<string, DeviceLink>();
  for (const [key, raw] of Object.entries(system)) {
    const pair = /link type between drm devices (\d+) and (\d+)/i.exec(key);
    if (!pair) continue;
    const [first, second] = [Number(pair[1]), Number(pair[2])].sort((x, y) => x - y);
    const value = presentText(scalarText(raw));
    if (first === second || value === undefined) continue;
    const type = linkType(value, key);
    const id = `${first}-${second}`;
    if (!links.has(id)) links.set(id, { a: accelerator(first), b: accelerator(second), type });
  }
  return [...links.values()];
}

function linkType(value: string, key: string): DeviceLink['type'] {
  switch (value.toUpperCase()) {
    case 'XGMI':
      return LinkType.LINK_TYPE_XGMI;
    case 'PCIE':
      return LinkType.LINK_TYPE_PHB;
    default:
      throw new ToolOutputError(TOPOLOGY_TOOL, `"${key}" is "${value}", expected XGMI or PCIE`);
  }
}
