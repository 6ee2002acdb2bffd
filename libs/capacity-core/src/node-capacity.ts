/**
 * What one node brings to its pool: its shape (which decides the pool's InstanceType family)
 * and its contribution to every capacity view (which the pool sums while the node is Ready).
 * Both are plain numbers so a pool can add and subtract them in O(1) per figure.
 */
import { Accelerator, MigDevice, NodeInventory, PoolIdentity } from '@gpufleet/contracts';
import { MigGeometry, MigProfile, migProfileIndex, sliceMask } from '@gpufleet/device-inventory';
import {
  AcceleratorAllocation,
  CORES_PERCENT_PER_ACCELERATOR,
  MigPartitionPlacement,
  NodeAllocations,
  SHARED_TOKENS_PER_ACCELERATOR,
} from './allocations';
import { isPoolAccelerator } from './pools';

/** The resources that size a pool's InstanceType units. */
export interface NodeShape {
  /** Accelerators of the pool's product. */
  readonly accelerators: number;
  readonly logicalCpus: number;
  /** MiB */
  readonly memoryMib: number;
  /** GiB */
  readonly localStorageGib: number;
  /** Smallest memory among the node's pool accelerators, MiB. */
  readonly acceleratorMemoryMib: number;
}

export function nodeShapeOf(inventory: NodeInventory, identity: PoolIdentity): NodeShape {
  let accelerators = 0;
  let acceleratorMemoryMib = Number.POSITIVE_INFINITY;
  for (const a of inventory.accelerators) {
    if (!isPoolAccelerator(a, identity)) continue;
    accelerators++;
    acceleratorMemoryMib = Math.min(acceleratorMemoryMib, a.memoryMib ?? 0);
  }
  return {
    accelerators,
    logicalCpus: inventory.cpu?.logicalCpus ?? 0,
    memoryMib: inventory.memory?.totalMib ?? 0,
    localStorageGib: inventory.localStorageGib,
    acceleratorMemoryMib: accelerators === 0 ? 0 : acceleratorMemoryMib,
  };
}

export function nodeShapeKey(shape: NodeShape): string {
  return `${shape.accelerators}/${shape.logicalCpus}/${shape.memoryMib}/${shape.localStorageGib}/${shape.acceleratorMemoryMib}`;
}

/**
 * A node's share of each view. Sums add up across Ready nodes; `max*` figures are the most a
 * single request can get on this node (or on one accelerator of it, for tokens and slices).
 */
export interface NodeContribution {
  readonly accelerators: number;
  readonly migAccelerators: number;
  /** Accelerators offered in the whole/shared/sliced modes (pool product, MIG disabled). */
  readonly wholeCapacity: number;
  /** Of those, accelerators with nothing allocated. */
  readonly wholeFree: number;
  readonly tokensCapacity: number;
  readonly tokensRemaining: number;
  readonly tokensMaxFree: number;
  readonly slicedMemoryCapacity: number;
  readonly slicedMemoryRemaining: number;
  readonly slicedMemoryMaxFree: number;
  readonly coresCapacity: number;
  readonly coresRemaining: number;
  readonly coresMaxFree: number;
  /** Per profile of the pool's MIG geometry, in catalogue order. */
  readonly partitionCapacity: readonly number[];
  readonly partitionRemaining: readonly number[];
  readonly cpuCapacity: number;
  readonly cpuRemaining: number;
  /** MiB */
  readonly memoryCapacity: number;
  /** MiB */
  readonly memoryRemaining: number;
}

const NO_PARTITIONS: readonly number[] = Object.freeze([]);
const zeroPartitionsByLength = new Map<number, readonly number[]>();
function zeroPartitions(length: number): readonly number[] {
  let zeros = zeroPartitionsByLength.get(length);
  if (!zeros) {
    zeros = Object.freeze(new Array<number>(length).fill(0));
    zeroPartitionsByLength.set(length, zeros);
  }
  return zeros;
}

function sumSlices(allocation: AcceleratorAllocation | undefined): { memoryMib: number; coresPercent: number } {
  let memoryMib = 0;
  let coresPercent = 0;
  if (allocation?.mode === 'sliced') {
    for (const s of allocation.slices) {
      memoryMib += s.memoryMib;
      coresPercent += s.coresPercent;
    }
  }
  return { memoryMib, coresPercent };
}

function isEmptyAllocation(allocation: AcceleratorAllocation | undefined): boolean {
  if (allocation === undefined) return true;
  if (allocation.mode === 'shared') return allocation.tokens <= 0;
  if (allocation.mode === 'sliced') return allocation.slices.length === 0;
  return false;
}

/** Slices taken on one MIG GPU, whether its media engines are taken, and its idle partitions. */
interface MigOccupancy {
  occupied: number;
  mediaInUse: boolean;
  /** Per profile: partitions that exist on the GPU and nobody is given. */
  idle: number[] | undefined;
}

/**
 * Partitions that exist on the GPU (inventory) are taken as fixed: an idle one counts as one
 * of its profile, and new partitions go only into slices no partition holds. An allocation at
 * the same profile and start as an existing partition is that partition; any other allocation
 * is a partition placed by the scheduler and not yet reported. An existing partition without a
 * reported start takes the first start of its profile still free.
 */
function migOccupancy(
  accelerator: Accelerator,
  geometry: MigGeometry,
  placements: readonly MigPartitionPlacement[] | undefined,
): MigOccupancy {
  const profiles = geometry.profiles;
  let occupied = 0;
  let mediaInUse = false;
  let idle: number[] | undefined;
  const unmatched = placements ? [...placements] : [];
  const claim = (index: number, start: number): boolean => {
    const i = unmatched.findIndex((p) => p.start === start && migProfileIndex(geometry, p.profile) === index);
    if (i < 0) return false;
    unmatched.splice(i, 1);
    return true;
  };
  const markIdle = (index: number): void => {
    idle ??= new Array<number>(profiles.length).fill(0);
    idle[index]++;
  };

  const unplaced: { device: MigDevice; index: number }[] = [];
  for (const device of accelerator.migDevices) {
    const index = migProfileIndex(geometry, device.profile);
    if (index < 0) {
      // A profile the catalogue does not know still holds its slices.
      if (device.placementStart !== undefined && device.placementSize !== undefined) {
        occupied |= sliceMask(device.placementStart, device.placementSize);
      }
      continue;
    }
    const profile = profiles[index];
    if (device.placementStart === undefined) {
      unplaced.push({ device, index });
      continue;
    }
    occupied |= sliceMask(device.placementStart, device.placementSize ?? profile.size);
    if (profile.mediaExtensions) mediaInUse = true;
    if (!claim(index, device.placementStart)) markIdle(index);
  }
  // Unplaced devices first try to be one of the scheduler's placements.
  const stillUnplaced: { index: number }[] = [];
  for (const { index } of unplaced) {
    const profile = profiles[index];
    const i = unmatched.findIndex(
      (p) => migProfileIndex(geometry, p.profile) === index && (occupied & sliceMask(p.start, profile.size)) === 0,
    );
    if (i >= 0) {
      occupied |= sliceMask(unmatched[i].start, profile.size);
      unmatched.splice(i, 1);
      if (profile.mediaExtensions) mediaInUse = true;
    } else {
      stillUnplaced.push({ index });
    }
  }
  for (const placement of unmatched) {
    const index = migProfileIndex(geometry, placement.profile);
    if (index < 0) continue;
    occupied |= sliceMask(placement.start, profiles[index].size);
    if (profiles[index].mediaExtensions) mediaInUse = true;
  }
  for (const { index } of stillUnplaced) {
    const profile = profiles[index];
    const start = firstFreeStart(geometry, profile, occupied);
    if (start < 0) continue; // inconsistent report: no room left for it
    occupied |= sliceMask(start, profile.size);
    if (profile.mediaExtensions) mediaInUse = true;
    markIdle(index);
  }
  return { occupied: occupied & ((1 << geometry.memorySlices) - 1), mediaInUse, idle };
}

/**
 * First valid start of a profile that does not overlap `occupied`, or -1. Used to place an
 * existing partition whose start the inventory did not report.
 */
function firstFreeStart(geometry: MigGeometry, profile: MigProfile, occupied: number): number {
  for (const start of profile.starts) {
    if (start + profile.size <= geometry.memorySlices && (occupied & sliceMask(start, profile.size)) === 0) return start;
  }
  return -1;
}

function groupPlacements(
  placements: readonly MigPartitionPlacement[] | undefined,
): Map<string, MigPartitionPlacement[]> | undefined {
  if (!placements || placements.length === 0) return undefined;
  const byAccelerator = new Map<string, MigPartitionPlacement[]>();
  for (const p of placements) {
    const list = byAccelerator.get(p.acceleratorId);
    if (list) list.push(p);
    else byAccelerator.set(p.acceleratorId, [p]);
  }
  return byAccelerator;
}

/**
 * The node's contribution to its pool's views. Only accelerators of the pool's product count;
 * a MIG-enabled accelerator offers partitions only (none when its product has no catalogued
 * MIG geometry).
 */
export function nodeContributionOf(
  inventory: NodeInventory,
  identity: PoolIdentity,
  geometry: MigGeometry | undefined,
  allocations: NodeAllocations,
): NodeContribution {
  const byId = allocations.accelerators;
  const placements = groupPlacements(allocations.migPartitions);
  const profileCount = geometry?.profiles.length ?? 0;
  let partitionCapacity: number[] | undefined;
  let partitionRemaining: number[] | undefined;

  let accelerators = 0;
  let migAccelerators = 0;
  let wholeCapacity = 0;
  let wholeFree = 0;
  let tokensRemaining = 0;
  let tokensMaxFree = 0;
  let slicedMemoryCapacity = 0;
  let slicedMemoryRemaining = 0;
  let slicedMemoryMaxFree = 0;
  let coresRemaining = 0;
  let coresMaxFree = 0;

  for (const a of inventory.accelerators) {
    if (!isPoolAccelerator(a, identity)) continue;
    accelerators++;
    if (a.migEnabled) {
      migAccelerators++;
      if (!geometry) continue;
      partitionCapacity ??= new Array<number>(profileCount).fill(0);
      partitionRemaining ??= new Array<number>(profileCount).fill(0);
      const { occupied, mediaInUse, idle } = migOccupancy(a, geometry, placements?.get(a.id));
      for (let i = 0; i < profileCount; i++) {
        const profile = geometry.profiles[i];
        partitionCapacity[i] += profile.placeableByMask[0];
        const placeable = profile.mediaExtensions && mediaInUse ? 0 : profile.placeableByMask[occupied];
        partitionRemaining[i] += placeable + (idle ? idle[i] : 0);
      }
      continue;
    }
    const memoryMib = a.memoryMib ?? 0;
    wholeCapacity++;
    slicedMemoryCapacity += memoryMib;
    const allocation = byId?.[a.id];
    if (isEmptyAllocation(allocation)) {
      wholeFree++;
      tokensRemaining += SHARED_TOKENS_PER_ACCELERATOR;
      tokensMaxFree = SHARED_TOKENS_PER_ACCELERATOR;
      slicedMemoryRemaining += memoryMib;
      slicedMemoryMaxFree = Math.max(slicedMemoryMaxFree, memoryMib);
      coresRemaining += CORES_PERCENT_PER_ACCELERATOR;
      coresMaxFree = CORES_PERCENT_PER_ACCELERATOR;
    } else if (allocation?.mode === 'shared') {
      const free = Math.max(0, SHARED_TOKENS_PER_ACCELERATOR - allocation.tokens);
      tokensRemaining += free;
      tokensMaxFree = Math.max(tokensMaxFree, free);
    } else if (allocation?.mode === 'sliced') {
      const used = sumSlices(allocation);
      const freeMemory = Math.max(0, memoryMib - used.memoryMib);
      const freeCores = Math.max(0, CORES_PERCENT_PER_ACCELERATOR - used.coresPercent);
      slicedMemoryRemaining += freeMemory;
      slicedMemoryMaxFree = Math.max(slicedMemoryMaxFree, freeMemory);
      coresRemaining += freeCores;
      coresMaxFree = Math.max(coresMaxFree, freeCores);
    }
    // mode 'whole': the accelerator offers nothing more.
  }

  const cpuCapacity = inventory.cpu?.logicalCpus ?? 0;
  const memoryCapacity = inventory.memory?.totalMib ?? 0;
  return {
    accelerators,
    migAccelerators,
    wholeCapacity,
    wholeFree,
    tokensCapacity: wholeCapacity * SHARED_TOKENS_PER_ACCELERATOR,
    tokensRemaining,
    tokensMaxFree,
    slicedMemoryCapacity,
    slicedMemoryRemaining,
    slicedMemoryMaxFree,
    coresCapacity: wholeCapacity * CORES_PERCENT_PER_ACCELERATOR,
    coresRemaining,
    coresMaxFree,
    partitionCapacity: partitionCapacity ?? (geometry ? zeroPartitions(profileCount) : NO_PARTITIONS),
    partitionRemaining: partitionRemaining ?? (geometry ? zeroPartitions(profileCount) : NO_PARTITIONS),
    cpuCapacity,
    cpuRemaining: Math.max(0, cpuCapacity - (allocations.vcpu ?? 0)),
    memoryCapacity,
    memoryRemaining: Math.max(0, memoryCapacity - (allocations.memoryMib ?? 0)),
  };
}

function sameNumbers(a: readonly number[], b: readonly number[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function sameContribution(a: NodeContribution, b: NodeContribution): boolean {
  return (
    a.accelerators === b.accelerators &&
    a.migAccelerators === b.migAccelerators &&
    a.wholeCapacity === b.wholeCapacity &&
    a.wholeFree === b.wholeFree &&
    a.tokensCapacity === b.tokensCapacity &&
    a.tokensRemaining === b.tokensRemaining &&
    a.tokensMaxFree === b.tokensMaxFree &&
    a.slicedMemoryCapacity === b.slicedMemoryCapacity &&
    a.slicedMemoryRemaining === b.slicedMemoryRemaining &&
    a.slicedMemoryMaxFree === b.slicedMemoryMaxFree &&
    a.coresCapacity === b.coresCapacity &&
    a.coresRemaining === b.coresRemaining &&
    a.coresMaxFree === b.coresMaxFree &&
    a.cpuCapacity === b.cpuCapacity &&
    a.cpuRemaining === b.cpuRemaining &&
    a.memoryCapacity === b.memoryCapacity &&
    a.memoryRemaining === b.memoryRemaining &&
    sameNumbers(a.partitionCapacity, b.partitionCapacity) &&
    sameNumbers(a.partitionRemaining, b.partitionRemaining)
  );
}
