import type { MigGeometry, MigProfile } from '../catalog';
import type { MigPartition } from './fleet-types';

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
  // The simulator models no media engines, so fleet files get no media-extension (+me) profiles.
  const offered = geometry.profiles.filter((p) => !p.mediaExtensions);
  const byName = new Map(offered.map((p) => [p.name, p]));
  const known = offered.map((p) => p.name).join(', ');
  const gpuClass = `${geometry.memoryGb} GB`;
  const resolved: Array<{ request: MigRequest; profile: MigProfile }> = [];
  for (const request of requests) {
    const profile = byName.get(request.profile);
    if (!profile) {
      return problem(
        `${request.path}.profile`,
        `expected one of ${known} (MIG profiles of a ${gpuClass} GPU), got ${JSON.stringify(request.profile)}`,
      );
    }
    if (request.start !== undefined && !profile.starts.includes(request.start)) {
      return problem(`${request.path}.start`, `expected one of ${profile.starts.join(', ')} for ${profile.name}, got ${request.start}`);
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
        `${profile.name} does not fit on ${gpuLabel}: the partitions so far need ${need} ${kind} slices, a ${gpuClass} GPU has ${have}`,
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
        `${profile.name} at start ${request.start} overlaps ${holder} on ${gpuLabel} (memory ${slicesText(request.start, profile.size)})`,
      );
    }
    occupy(request.start, profile.size, `${profile.name}@${request.start}`);
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
      occupy(start, profile.size, `${profile.name}@${start}`);
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
      `${stuck.profile.name} does not fit on ${gpuLabel} next to the other partitions: no arrangement on the allowed starts (${stuck.profile.starts.join(', ')}) leaves room for it`,
    );
  }

  return {
    partitions: resolved
      .map(({ request, profile }) => ({
        profile: profile.name,
        start: starts.get(request)!,
        size: profile.size,
        computeSlices: profile.computeSlices,
        // The GPU's memory split evenly over its slices, rounded down to 256 MiB.
        memoryMib: Math.floor((gpuMemoryMib * profile.size) / geometry.memorySlices / 256) * 256,
      }))
      .sort((a, b) => a.start - b.start),
  };
}
