/**
 * aarch64 /proc/cpuinfo has no vendor or model name, only the MIDR fields "CPU implementer"
 * and "CPU part". These tables name them the way lscpu does, for the server parts a GPU node
 * is likely to carry; an unknown part still yields a stable, readable model string.
 */
const IMPLEMENTERS: Record<number, string> = {
  0x41: 'ARM',
  0x42: 'Broadcom',
  0x43: 'Cavium',
  0x46: 'Fujitsu',
  0x48: 'HiSilicon',
  0x4e: 'NVIDIA',
  0x50: 'APM',
  0x51: 'Qualcomm',
  0x61: 'Apple',
  0xc0: 'Ampere',
};

const PARTS: Record<number, Record<number, string>> = {
  0x41: {
    0xd08: 'Cortex-A72',
    0xd0c: 'Neoverse-N1',
    0xd40: 'Neoverse-V1',
    0xd49: 'Neoverse-N2',
    0xd4f: 'Neoverse-V2',
    0xd84: 'Neoverse-V3',
    0xd8e: 'Neoverse-N3',
  },
  0x46: { 0x001: 'A64FX' },
  0x48: { 0xd01: 'Kunpeng-920' },
  0x4e: { 0x004: 'Carmel' },
  0xc0: { 0xac3: 'Ampere-1', 0xac4: 'Ampere-1a' },
};

function parseHex(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number.parseInt(value.trim(), 16);
  return Number.isNaN(n) ? undefined : n;
}

/** Vendor and model for an aarch64 core from its MIDR fields, e.g. ("0x41", "0xd4f") → ARM Neoverse-V2. */
export function describeArmCore(
  implementer: string | undefined,
  part: string | undefined,
): { vendor: string; model: string } | undefined {
  const impl = parseHex(implementer);
  if (impl === undefined) return undefined;
  const vendor = IMPLEMENTERS[impl] ?? `implementer 0x${impl.toString(16)}`;
  const partId = parseHex(part);
  if (partId === undefined) return { vendor, model: vendor };
  const model = PARTS[impl]?.[partId] ?? `${vendor} part 0x${partId.toString(16).padStart(3, '0')}`;
  return { vendor, model };
}
