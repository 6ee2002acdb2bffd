import type { MigPartition } from './fleet-types';

/** A GPU instance profile: its compute and memory slices and where it may start. */
export interface MigProfile {
  profile: string;
  computeSlices: number;
  /** Memory slices occupied (the placement size nvidia-smi prints). */
  size: number;
  /** Allowed placement starts (nvidia-smi mig -lgipp). */
  starts: number[];
}

/** The MIG geometry of one GPU memory class. */
export interface MigGeometry {
  /** e.g. "80 GB" */
  label: string;
  memorySlices: number;
  computeSlices: number;
  profiles: MigProfile[];
}

/**
 * A100/H100/H200/B200-class GPUs share one geometry (8 memory slices, 7 compute slices);
 * only the memory in the profile names differs. `m` are the names' GB for 1, 2, 4 and 8 slices.
 */
function eightSliceGeometry(label: string, m: [number, number, number, number]): MigGeometry {
  return {
    label,
    memorySlices: 8,
    computeSlices: 7,
    profiles: [
      { profile: `1g.${m[0]}gb`, computeSlices: 1, size: 1, starts: [0, 1, 2, 3, 4, 5, 6] },
      { profile: `1g.${m[1]}gb`, computeSlices: 1, size: 2, starts: [0, 2, 4, 6] },
      { profile: `2g.${m[1]}gb`, computeSlices: 2, size: 2, starts: [0, 2, 4] },
      { profile: `3g.${m[2]}gb`, computeSlices: 3, size: 4, starts: [0, 4] },
      { profile: `4g.${m[2]}gb`, computeSlices: 4, size: 4, starts: [0] },
      { profile: `7g.${m[3]}gb`, computeSlices: 7, size: 8, starts: [0] },
    ],
  };
}

const A30: MigGeometry = {
  label: '24 GB',
  memorySlices: 4,
  computeSlices: 4,
  profiles: [
    { profile: '1g.6gb', computeSlices: 1, size: 1, starts: [0, 1, 2, 3] },
    { profile: '2g.12gb', computeSlices: 2, size: 2, starts: [0, 2] },
    { profile: '4g.24gb', computeSlices: 4, size: 4, starts: [0] },
  ],
};

/** Memory classes by total MiB as the driver reports it; matched within a few percent. */
const GEOMETRIES: Array<{ memoryMib: number; geometry: MigGeometry }> = [
  { memoryMib: 24576, geometry: A30 },
  { memoryMib: 40960, geometry: eightSliceGeometry('40 GB', [5, 10, 20, 40]) },
  { memoryMib: 81559, geometry: eightSliceGeometry('80 GB', [10, 20, 40, 80]) },
  { memoryMib: 95830, geometry: eightSliceGeometry('94 GB', [12, 24, 47, 94]) },
  { memoryMib: 97871, geometry: eightSliceGeometry('96 GB', [12, 24, 48, 96]) },
  { memoryMib: 143771, geometry: eightSliceGeometry('141 GB', [18, 35, 71, 141]) },
  { memoryMib: 183359, geometry: eightSliceGeometry('180 GB', [23, 45, 90, 180]) },
];

export function migGeometryFor(memoryMib: number): MigGeometry | undefined {
  let best: { distance: number; geometry: MigGeometry } | undefined;
  for (const { memoryMib: classMib, geometry } of GEOMETRIES) {
    const distance = Math.abs(classMib - memoryMib) / classMib;
    if (distance <= 0.02 && (!best || distance < best.distance)) best = { distance, geometry };
  }
  return best?.geometry;
}

/** A partition as the fleet file asks for it; `start` absent means "first place it fits". */
export interface MigRequest {
  profile: string;
  start?: number;
  /** Field path for messages, e.g. nodes[3].accelerators.mig.partitions[2]. */
  path: string;
}

export type PlacementProblem = { path: string; message: string };

function slicesText(start: number, size: number): string {
  return size === 1 ? `slice ${start}` : `slices ${start}-${start + size - 1}`;
}

function problem(path: string, message: string): { problem: PlacementProblem } {
  return { problem: { path, message } };
}

/**
 * Places a GPU's partitions on its memory slices the way the driver would accept them.
 * Pinned partitions keep their start; the rest are searched (largest first, every allowed
 * start, backtracking), so a layout that fits is found regardless of the order it was
 * written in — 3g.40gb + 2g.20gb + 1g.10gb + 1g.10gb fits only with the 3g at start 4.
 * Returns the partitions sorted by placement, or the first problem found.
 */
export function placeMigPartitions(
  requests: MigRequest[],
  geometry: MigGeometry,
  gpuMemoryMib: number,
  gpuLabel: string,
): { partitions: MigPartition[] } | { problem: PlacementProblem } {
  const byName = new Map(geometry.profiles.map((p) => [p.profile, p]));
  const known = geometry.profiles.map((p) => p.profile).join(', ');
  const resolved: Array<{ request: MigRequest; profile: MigProfile }> = [];
  for (const request of requests) {
    const profile = byName.get(request.profile);
    if (!profile) {
      return problem(
        `${request.path}.profile`,
        `expected one of ${known} (MIG profiles of a ${geometry.label} GPU), got ${JSON.stringify(request.profile)}`,
      );
    }
    if (request.start !== undefined && !profile.starts.includes(request.start)) {
      return problem(`${request.path}.start`, `expected one of ${profile.starts.join(', ')} for ${profile.profile}, got ${request.start}`);
    }
    resolved.push({ request, profile });
  }

  let compute = 0;
  let memory = 0;
  for (const { request, profile } of resolved) {
    compute += profile.computeSlices;
    memory += profile.size;
    if (compute > geometry.computeSlices || memory > geometry.memorySlices) {
      const [need, have, kind] =
        compute > geometry.computeSlices ? [compute, geometry.computeSlices, 'compute'] : [memory, geometry.memorySlices, 'memory'];
      return problem(
        request.path,
        `${profile.profile} does not fit on ${gpuLabel}: the partitions so far need ${need} ${kind} slices, a ${geometry.label} GPU has ${have}`,
      );
    }
  }

  const used = new Array<string | undefined>(geometry.memorySlices).fill(undefined);
  const free = (start: number, size: number) => used.slice(start, start + size).every((u) => u === undefined);
  const occupy = (start: number, size: number, holder: string | undefined) => used.fill(holder, start, start + size);
  const starts = new Map<MigRequest, number>();

  for (const { request, profile } of resolved) {
    if (request.start === undefined) continue;
    if (!free(request.start, profile.size)) {
      const holder = used.slice(request.start, request.start + profile.size).find((u) => u !== undefined);
      return problem(
        request.path,
        `${profile.profile} at start ${request.start} overlaps ${holder} on ${gpuLabel} (memory ${slicesText(request.start, profile.size)})`,
      );
    }
    occupy(request.start, profile.size, `${profile.profile}@${request.start}`);
    starts.set(request, request.start);
  }

  const unpinned = resolved.filter((r) => r.request.start === undefined).sort((a, b) => b.profile.size - a.profile.size);
  let deepest = 0;
  const search = (i: number): boolean => {
    deepest = Math.max(deepest, i);
    if (i === unpinned.length) return true;
    const { request, profile } = unpinned[i];
    for (const start of profile.starts) {
      if (!free(start, profile.size)) continue;
      occupy(start, profile.size, `${profile.profile}@${start}`);
      starts.set(request, start);
      if (search(i + 1)) return true;
      occupy(start, profile.size, undefined);
      starts.delete(request);
    }
    return false;
  };
  if (!search(0)) {
    const stuck = unpinned[Math.min(deepest, unpinned.length - 1)];
    return problem(
      stuck.request.path,
      `${stuck.profile.profile} does not fit on ${gpuLabel} next to the other partitions: no arrangement on the allowed starts (${stuck.profile.starts.join(', ')}) leaves room for it`,
    );
  }

  return {
    partitions: resolved
      .map(({ request, profile }) => ({
        profile: profile.profile,
        start: starts.get(request)!,
        size: profile.size,
        computeSlices: profile.computeSlices,
        // The GPU's memory split evenly over its slices, rounded down to 256 MiB.
        memoryMib: Math.floor((gpuMemoryMib * profile.size) / geometry.memorySlices / 256) * 256,
      }))
      .sort((a, b) => a.start - b.start),
  };
}
