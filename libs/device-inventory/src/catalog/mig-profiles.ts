/**
 * MIG (Multi-Instance GPU) profile catalogue: which GPU instance profiles each product offers
 * and where on the GPU each may start.
 *
 * A MIG-capable GPU has a row of memory slices (8 on A100/H100/H200/H20/B200, 4 on A30). A GPU
 * instance occupies `size` consecutive slices and may only start at the slices listed in
 * `starts` — the `{starts}:size` notation `nvidia-smi mig -lgipp` prints. Two instances may not
 * share a slice. Facts from NVIDIA's MIG User Guide ("Supported MIG Profiles", "Supported
 * GPUs"), `nvidia-smi mig -lgipp` output on A100, A30, H100 and H100 NVL, and the GPU
 * Operator's default mig-parted configuration (profiles and instance counts per device).
 * H200, H20, GB200, GH200 and B200 have the same 8-slice geometry as H100 (same memory
 * fractions and instance counts: 7 × 1g, 4 × 1g double-memory, 3 × 2g, 2 × 3g, 1 × 4g,
 * 1 × 7g); only the profile names (memory in GB) differ.
 */

export interface MigProfile {
  /** Name as nvidia-smi prints it without the "MIG " prefix, e.g. "3g.40gb", "1g.10gb+me". */
  readonly name: string;
  /** Compute slices (the "3g" in "3g.40gb"). */
  readonly computeSlices: number;
  /** Memory slices the instance occupies (placement size). */
  readonly size: number;
  /** Memory slices the instance may start at. */
  readonly starts: readonly number[];
  /**
   * Holds the media engines (NVDEC/NVJPG/OFA) a GPU has only one set of ("+me" profiles):
   * at most one such instance per GPU.
   */
  readonly mediaExtensions: boolean;
  /** For every occupancy bitmask of the GPU's slices: how many more instances of this profile fit. */
  readonly placeableByMask: Uint8Array;
}

export interface MigGeometry {
  /** Catalogue key, e.g. "A100-80GB", "H100-94GB". */
  readonly key: string;
  /** GB, as the profile names count it: the memory of the profile that spans the whole GPU. */
  readonly memoryGb: number;
  /** Memory slices of one GPU. */
  readonly memorySlices: number;
  /** Compute slices of one GPU: those of the profile that spans it (7g on 8-slice GPUs, 4g on A30). */
  readonly computeSlices: number;
  readonly profiles: readonly MigProfile[];
}

/** Bitmask of the memory slices an instance starting at `start` with `size` slices occupies. */
export function sliceMask(start: number, size: number): number {
  return ((1 << size) - 1) << start;
}

/**
 * How many more instances of a profile fit on a GPU whose slices `occupied` are taken.
 * Taking valid starts lowest first is optimal: every placement of a profile has the same
 * size, so the earliest-ending interval is always a safe choice (interval scheduling).
 */
function countPlaceable(memorySlices: number, size: number, starts: readonly number[], occupied: number): number {
  let mask = occupied;
  let count = 0;
  for (const start of starts) {
    if (start + size > memorySlices) continue;
    const bits = sliceMask(start, size);
    if ((mask & bits) === 0) {
      mask |= bits;
      count++;
    }
  }
  return count;
}

function profile(
  memorySlices: number,
  name: string,
  computeSlices: number,
  size: number,
  starts: readonly number[],
  mediaExtensions = false,
): MigProfile {
  const placeableByMask = new Uint8Array(1 << memorySlices);
  for (let mask = 0; mask < placeableByMask.length; mask++) {
    const count = countPlaceable(memorySlices, size, starts, mask);
    placeableByMask[mask] = mediaExtensions ? Math.min(count, 1) : count;
  }
  return Object.freeze({ name, computeSlices, size, starts: Object.freeze([...starts]), mediaExtensions, placeableByMask });
}

/**
 * A geometry from its profiles. The profile that spans every memory slice is the whole GPU: it
 * holds all compute slices, and its name states the memory the other names divide.
 */
function geometry(model: string, memorySlices: number, profiles: readonly MigProfile[]): MigGeometry {
  const whole = profiles.find((p) => p.size === memorySlices);
  const memoryGb = whole && migProfileMemoryGb(whole.name);
  if (!whole || memoryGb === undefined) throw new Error(`MIG geometry of ${model} has no whole-GPU profile`);
  return Object.freeze({
    key: `${model}-${memoryGb}GB`,
    memoryGb,
    memorySlices,
    computeSlices: whole.computeSlices,
    profiles: Object.freeze([...profiles]),
  });
}

/**
 * The 8-slice layout shared by A100, H100, H200, H20, GB200 and B200 (profile ids 19, 20, 15,
 * 14, 9, 5, 0 in `nvidia-smi mig -lgip`). Names: 1 compute + 1 memory slice, the same with
 * 2 memory slices, then 2g, 3g, 4g and the full 7g instance.
 */
function eightSliceGeometry(
  model: string,
  names: { g1: string; g1x2: string; g2: string; g3: string; g4: string; g7: string },
): MigGeometry {
  const S = 8;
  return geometry(model, S, [
    profile(S, names.g1, 1, 1, [0, 1, 2, 3, 4, 5, 6]),
    profile(S, `${names.g1}+me`, 1, 1, [0, 1, 2, 3, 4, 5, 6], true),
    profile(S, names.g1x2, 1, 2, [0, 2, 4, 6]),
    profile(S, names.g2, 2, 2, [0, 2, 4]),
    profile(S, names.g3, 3, 4, [0, 4]),
    profile(S, names.g4, 4, 4, [0]),
    profile(S, names.g7, 7, 8, [0]),
  ]);
}

/** A30-24GB: 4 memory slices, 4 compute slices. */
function a30Geometry(): MigGeometry {
  const S = 4;
  return geometry('A30', S, [
    profile(S, '1g.6gb', 1, 1, [0, 1, 2, 3]),
    profile(S, '1g.6gb+me', 1, 1, [0, 1, 2, 3], true),
    profile(S, '2g.12gb', 2, 2, [0, 2]),
    profile(S, '2g.12gb+me', 2, 2, [0, 2], true),
    profile(S, '4g.24gb', 4, 4, [0]),
  ]);
}

const H100_80GB_NAMES = { g1: '1g.10gb', g1x2: '1g.20gb', g2: '2g.20gb', g3: '3g.40gb', g4: '4g.40gb', g7: '7g.80gb' };
const H100_96GB_NAMES = { g1: '1g.12gb', g1x2: '1g.24gb', g2: '2g.24gb', g3: '3g.48gb', g4: '4g.48gb', g7: '7g.96gb' };

function byKey(geometries: readonly MigGeometry[]): Readonly<Record<string, MigGeometry>> {
  return Object.freeze(Object.fromEntries(geometries.map((g) => [g.key, g])));
}

/** Every product gpufleet knows MIG geometry for, by catalogue key. */
export const MIG_CATALOGUE: Readonly<Record<string, MigGeometry>> = byKey([
  a30Geometry(),
  eightSliceGeometry('A100', {
    g1: '1g.5gb', g1x2: '1g.10gb', g2: '2g.10gb', g3: '3g.20gb', g4: '4g.20gb', g7: '7g.40gb',
  }),
  eightSliceGeometry('A100', H100_80GB_NAMES),
  eightSliceGeometry('H100', H100_80GB_NAMES),
  eightSliceGeometry('H100', {
    g1: '1g.12gb', g1x2: '1g.24gb', g2: '2g.24gb', g3: '3g.47gb', g4: '4g.47gb', g7: '7g.94gb',
  }),
  eightSliceGeometry('H100', H100_96GB_NAMES),
  eightSliceGeometry('H20', H100_96GB_NAMES),
  eightSliceGeometry('H200', {
    g1: '1g.18gb', g1x2: '1g.35gb', g2: '2g.35gb', g3: '3g.71gb', g4: '4g.71gb', g7: '7g.141gb',
  }),
  eightSliceGeometry('GH200', {
    g1: '1g.18gb', g1x2: '1g.36gb', g2: '2g.36gb', g3: '3g.72gb', g4: '4g.72gb', g7: '7g.144gb',
  }),
  eightSliceGeometry('B200', {
    g1: '1g.23gb', g1x2: '1g.45gb', g2: '2g.45gb', g3: '3g.90gb', g4: '4g.90gb', g7: '7g.180gb',
  }),
  eightSliceGeometry('GB200', {
    g1: '1g.23gb', g1x2: '1g.47gb', g2: '2g.47gb', g3: '3g.93gb', g4: '4g.93gb', g7: '7g.186gb',
  }),
]);

// MiB thresholds that tell memory variants apart when the product name does not say
// (e.g. "NVIDIA H100 PCIe", "NVIDIA A100-PCIE"); usable memory is a little under the marketed GB.
const A100_80GB_MIN_MIB = 60_000;
const H100_94GB_MIN_MIB = 88_000;

/**
 * The MIG geometry of a product, from its name as nvidia-smi prints it ("NVIDIA A100-SXM4-80GB",
 * "NVIDIA H100 80GB HBM3", "NVIDIA H100 NVL", "NVIDIA H200", "NVIDIA B200"…). The accelerator's
 * memory, when known, settles names that do not carry the memory size. Undefined: the product
 * has no MIG (e.g. L40S) or is not catalogued.
 */
export function migGeometryForProduct(product: string, acceleratorMemoryMib?: number): MigGeometry | undefined {
  const name = product.toUpperCase().replace(/^NVIDIA\s+/, '');
  const has = (re: RegExp): boolean => re.test(name);
  const mem = acceleratorMemoryMib ?? 0;
  if (has(/\bGB200\b/)) return MIG_CATALOGUE['GB200-186GB'];
  if (has(/\bGH200\b/)) return has(/144G/) ? MIG_CATALOGUE['GH200-144GB'] : MIG_CATALOGUE['H100-96GB'];
  if (has(/\bB200\b/)) return MIG_CATALOGUE['B200-180GB'];
  if (has(/\bH200\b/)) return MIG_CATALOGUE['H200-141GB'];
  if (has(/\bH20\b/)) return MIG_CATALOGUE['H20-96GB'];
  if (has(/\bH(100|800)\b/)) {
    if (has(/\bNVL\b|94G/)) return MIG_CATALOGUE['H100-94GB'];
    if (has(/96G/)) return MIG_CATALOGUE['H100-96GB'];
    if (has(/80G/)) return MIG_CATALOGUE['H100-80GB'];
    return mem >= H100_94GB_MIN_MIB ? MIG_CATALOGUE['H100-94GB'] : MIG_CATALOGUE['H100-80GB'];
  }
  if (has(/\bA(100|800)\b/)) {
    if (has(/80G/)) return MIG_CATALOGUE['A100-80GB'];
    if (has(/40G/)) return MIG_CATALOGUE['A100-40GB'];
    return mem >= A100_80GB_MIN_MIB ? MIG_CATALOGUE['A100-80GB'] : MIG_CATALOGUE['A100-40GB'];
  }
  if (has(/\bA30\b/)) return MIG_CATALOGUE['A30-24GB'];
  return undefined;
}

/** Profile names as inventories and users write them: "MIG 3g.40gb", "3G.40GB" → "3g.40gb". */
export function normalizeMigProfileName(name: string): string {
  return name.trim().replace(/^mig\s+/i, '').toLowerCase();
}

/** Index of a profile within its geometry, or -1 when the GPU does not offer it. */
export function migProfileIndex(geometry: MigGeometry, profileName: string): number {
  const wanted = normalizeMigProfileName(profileName);
  return geometry.profiles.findIndex((p) => p.name === wanted);
}

/** GB a profile name states: "3g.40gb" -> 40, "1c.3g.40gb" -> 40, "1g.10gb+me" -> 10. */
function migProfileMemoryGb(profile: string): number | undefined {
  const gigabytes = /(?:^|\.)(\d+(?:\.\d+)?)gb\b/i.exec(profile);
  return gigabytes ? Number(gigabytes[1]) : undefined;
}

/**
 * Nominal memory of a MIG profile from its name: "1g.10gb" -> 10240 MiB, "1c.3g.40gb" -> 40960,
 * "1g.10gb+me" -> 10240. The real slice is slightly smaller (9856 MiB for 1g.10gb on an A100 80GB);
 * this is the figure to use only when nothing better was read.
 */
export function migProfileMemoryMib(profile: string): number | undefined {
  const gigabytes = migProfileMemoryGb(profile);
  return gigabytes === undefined ? undefined : Math.round(gigabytes * 1024);
}
