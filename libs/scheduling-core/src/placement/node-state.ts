/**
 * One node as the placement engine sees it: the accelerators of its pool's product, what the
 * ledger holds on each, and its free vCPU and memory. State is kept as hold counters, so
 * applying a ledger entry and taking it back are the same operation with opposite signs and
 * leave no trace (a tentative placement undone restores the node exactly).
 */
import type { Accelerator, NodeInventory, PodPlacement } from '@gpufleet/contracts';
import { CORES_PERCENT_PER_ACCELERATOR, dominantProduct, SHARED_TOKENS_PER_ACCELERATOR } from '@gpufleet/capacity-core';
import { MigGeometry, migGeometryForProduct, migProfileIndex, MigProfile, sliceMask } from '@gpufleet/device-inventory';
import { podHoldOf } from '../ledger/pod-hold';
import { Interconnect } from './interconnect';
import type { Bucket, Domain } from './pool-index';
import { domainKeysOf } from './topology-levels';

/** Bitmasks are 32-bit: accelerators past this many on one node are not offered. */
export const MAX_ACCELERATORS_PER_NODE = 32;

/** A MIG partition that exists on the GPU (reported by the node's agent). */
export interface ExistingPartition {
  readonly profileIndex: number;
  readonly start: number;
  readonly mask: number;
  /** Ledger entries holding it; 0 = idle, offered before any new partition. */
  holds: number;
}

export class MigState {
  /** Per memory slice: ledger holds of partitions the scheduler placed (not existing ones). */
  readonly sliceHolds: Uint16Array;
  /** Slices of existing partitions; they stay taken whoever holds them. */
  readonly existingMask: number;
  readonly existing: ExistingPartition[];
  readonly existingMedia: boolean;
  mediaHolds = 0;
  /** existingMask | slices the scheduler's partitions hold. */
  occupied: number;

  constructor(readonly geometry: MigGeometry, accelerator: Accelerator) {
    this.sliceHolds = new Uint16Array(geometry.memorySlices);
    const existing: ExistingPartition[] = [];
    let mask = 0;
    let media = false;
    const unplaced: number[] = [];
    // Same reading as the capacity views: a partition without a reported start takes the first
    // start of its profile that the reported ones leave free.
    for (const device of accelerator.migDevices) {
      const index = migProfileIndex(geometry, device.profile);
      if (index < 0) {
        if (device.placementStart !== undefined && device.placementSize !== undefined) {
          mask |= sliceMask(device.placementStart, device.placementSize);
        }
        continue;
      }
      if (device.placementStart === undefined) {
        unplaced.push(index);
        continue;
      }
      const partMask = sliceMask(device.placementStart, device.placementSize ?? geometry.profiles[index].size);
      existing.push({ profileIndex: index, start: device.placementStart, mask: partMask, holds: 0 });
      mask |= partMask;
      media ||= geometry.profiles[index].mediaExtensions;
    }
    for (const index of unplaced) {
      const profile = geometry.profiles[index];
      const start = profile.starts.find((s) => s + profile.size <= geometry.memorySlices && (mask & sliceMask(s, profile.size)) === 0);
      if (start === undefined) continue;
      const partMask = sliceMask(start, profile.size);
      existing.push({ profileIndex: index, start, mask: partMask, holds: 0 });
      mask |= partMask;
      media ||= profile.mediaExtensions;
    }
    this.existing = existing;
    this.existingMask = mask & fullMask(geometry);
    this.existingMedia = media;
    this.occupied = this.existingMask;
  }

  get mediaInUse(): boolean {
    return this.existingMedia || this.mediaHolds > 0;
  }

  /** Slices taken (by existing or placed partitions): the measure binpack and spread sort by. */
  get usedSlices(): number {
    let count = 0;
    for (let m = this.occupied; m !== 0; m &= m - 1) count++;
    return count;
  }

  /** An existing partition of the profile that nobody holds, lowest start first. */
  idlePartition(profileIndex: number): ExistingPartition | undefined {
    let best: ExistingPartition | undefined;
    for (const p of this.existing) {
      if (p.profileIndex === profileIndex && p.holds === 0 && (!best || p.start < best.start)) best = p;
    }
    return best;
  }

  canPlaceNew(profileIndex: number): boolean {
    const profile = this.geometry.profiles[profileIndex];
    return !(profile.mediaExtensions && this.mediaInUse) && profile.placeableByMask[this.occupied] > 0;
  }

  /**
   * Start of a new partition of the profile in free slices, -1 if none. Of the valid starts,
   * the one that leaves the most room for every profile (weighted by its size) wins, so small
   * partitions do not split the GPU where a large one could still go.
   */
  bestNewStart(profileIndex: number): number {
    if (!this.canPlaceNew(profileIndex)) return -1;
    const geometry = this.geometry;
    const profile = geometry.profiles[profileIndex];
    let best = -1;
    let bestRoom = -1;
    for (const start of profile.starts) {
      if (start + profile.size > geometry.memorySlices) continue;
      const mask = sliceMask(start, profile.size);
      if ((this.occupied & mask) !== 0) continue;
      const after = this.occupied | mask;
      let room = 0;
      for (const p of geometry.profiles) room += p.placeableByMask[after] * p.size;
      if (room > bestRoom) {
        best = start;
        bestRoom = room;
      }
    }
    return best;
  }

  /** Whether `start` is where a new partition of the profile may go now. */
  isFreeStart(profile: MigProfile, start: number): boolean {
    if (!profile.starts.includes(start) || start + profile.size > this.geometry.memorySlices) return false;
    if (profile.mediaExtensions && this.mediaInUse) return false;
    return (this.occupied & sliceMask(start, profile.size)) === 0;
  }

  existingAt(profileIndex: number, start: number): ExistingPartition | undefined {
    return this.existing.find((p) => p.profileIndex === profileIndex && p.start === start);
  }

  /** Holds (sign 1) or gives back (sign -1) a partition; unknown profiles are ignored. */
  adjust(profileName: string, start: number, sign: number): void {
    const index = migProfileIndex(this.geometry, profileName);
    if (index < 0) return;
    const existing = this.existingAt(index, start);
    if (existing) {
      existing.holds += sign;
      return;
    }
    const profile = this.geometry.profiles[index];
    for (let s = start; s < start + profile.size && s < this.sliceHolds.length; s++) this.sliceHolds[s] += sign;
    if (profile.mediaExtensions) this.mediaHolds += sign;
    let held = 0;
    for (let s = 0; s < this.sliceHolds.length; s++) if (this.sliceHolds[s] > 0) held |= 1 << s;
    this.occupied = this.existingMask | held;
  }
}

function fullMask(geometry: MigGeometry): number {
  return (1 << geometry.memorySlices) - 1;
}

const NO_WITHHELD: ReadonlySet<string> = new Set();

export class AcceleratorState {
  wholeHolds = 0;
  /** Shared tokens handed out, of 10. */
  tokens = 0;
  /** MiB held by slices. */
  sliceMemoryMib = 0;
  sliceCoresPercent = 0;
  slices = 0;
  /** MIG partitions held; on a GPU without MIG (inventory changed under the ledger) they block it. */
  partitionHolds = 0;
  /** Index buckets this accelerator is in, and the slot of each (kept by the pool index). */
  readonly memberships: Bucket<AcceleratorState>[] = [];
  readonly membershipSlots: number[] = [];
  readonly slots: number[] = [];

  constructor(
    readonly node: NodeState,
    readonly id: string,
    /** Position within the node's offered accelerators: its bit in masks. */
    readonly bit: number,
    /** MiB */
    readonly memoryMib: number,
    /** Set when MIG is enabled: the accelerator then offers partitions only. */
    readonly mig: MigState | undefined,
    /** MIG enabled but its product has no catalogued geometry, or withheld: it offers nothing. */
    readonly unusable: boolean,
  ) {}

  /*
   * Holds that contradict the accelerator's mode (a whole pod on a GPU since switched to MIG,
   * a partition on one since switched back) make it offer nothing until they are released:
   * the ledger is the truth, and handing out a contested device could allocate it twice.
   */

  get isFree(): boolean {
    return (
      this.mig === undefined && !this.unusable && this.wholeHolds === 0 && this.tokens === 0 && this.slices === 0 && this.partitionHolds === 0
    );
  }

  /** Free tokens when the accelerator may take shared pods (free or already shared), else -1. */
  get freeTokens(): number {
    if (this.mig || this.unusable || this.wholeHolds > 0 || this.slices > 0 || this.partitionHolds > 0) return -1;
    return Math.max(0, SHARED_TOKENS_PER_ACCELERATOR - this.tokens);
  }

  /** Free compute percent when the accelerator may take slices (free or already sliced), else -1. */
  get freeCoresPercent(): number {
    if (this.mig || this.unusable || this.wholeHolds > 0 || this.tokens > 0 || this.partitionHolds > 0) return -1;
    return Math.max(0, CORES_PERCENT_PER_ACCELERATOR - this.sliceCoresPercent);
  }

  /** The MIG state, when the GPU may take partitions (MIG enabled, no contradicting holds). */
  get partitionable(): MigState | undefined {
    return this.wholeHolds === 0 && this.tokens === 0 && this.slices === 0 ? this.mig : undefined;
  }

  /** MiB */
  get freeSliceMemoryMib(): number {
    return Math.max(0, this.memoryMib - this.sliceMemoryMib);
  }
}

/** Told of each accelerator whose holds changed (the pool index, to re-file it). */
export interface AcceleratorListener {
  refreshAccelerator(accelerator: AcceleratorState): void;
}

export class NodeState {
  readonly name: string;
  readonly accelerators: AcceleratorState[];
  readonly byId = new Map<string, AcceleratorState>();
  readonly interconnect: Interconnect;
  /** Domain key per topology level (see topology-levels). */
  readonly domainKeys: string[];
  /** Accelerators offered for whole use (not MIG-enabled), as a mask. */
  readonly wholeMask: number;
  /** Of those, the ones nothing holds. */
  freeMask: number;
  freeCount: number;
  readonly vcpuCapacity: number;
  /** MiB */
  readonly memoryCapacityMib: number;
  vcpuUsed = 0;
  /** MiB */
  memoryUsedMib = 0;
  /** Whether the pool index lists this node (it is Ready). */
  indexed = false;
  /**
   * Set only while one request is placed: the node may not take that request's pods (it runs
   * pods unconfined and holds another namespace's; see tenancy). Every choice checks it.
   */
  fenced = false;
  /** The domains listing it, per topology level (kept by the pool index). */
  domains: Domain[] = [];
  /** The free count it is filed under in those domains. */
  filedFree = -1;
  /** Its positions in the domains' buckets (see Bucket). */
  readonly slots: number[] = [];

  constructor(
    readonly inventory: NodeInventory,
    readonly pool: string,
    readonly ready: boolean,
    /** Accelerator ids offered for nothing (the kubelet cannot allocate them); ledger holds on them still count. */
    readonly withheld: ReadonlySet<string> = NO_WITHHELD,
  ) {
    this.name = inventory.nodeName;
    const dominant = dominantProduct(inventory.accelerators);
    // Only the pool's product is offered, as in the capacity views.
    const offered = inventory.accelerators
      .filter((a) => dominant !== undefined && a.product === dominant.product && a.vendor === dominant.vendor)
      .slice(0, MAX_ACCELERATORS_PER_NODE);
    let wholeMask = 0;
    this.accelerators = offered.map((a, bit) => {
      const geometry = a.migEnabled ? migGeometryForProduct(a.product, a.memoryMib) : undefined;
      const mig = geometry && new MigState(geometry, a);
      const kept = withheld.has(a.id);
      if (!a.migEnabled && !kept) wholeMask |= 1 << bit;
      const state = new AcceleratorState(this, a.id, bit, a.memoryMib ?? 0, kept ? undefined : mig, kept || (a.migEnabled && !geometry));
      this.byId.set(a.id, state);
      return state;
    });
    this.wholeMask = wholeMask >>> 0;
    this.freeMask = this.wholeMask;
    this.freeCount = this.accelerators.filter((a) => a.isFree).length;
    this.interconnect = Interconnect.of(inventory, offered);
    this.domainKeys = domainKeysOf(inventory);
    this.vcpuCapacity = inventory.cpu?.logicalCpus ?? 0;
    this.memoryCapacityMib = inventory.memory?.totalMib ?? 0;
  }

  /** Accelerators offered for whole use (free or not). */
  get wholeCapacity(): number {
    let count = 0;
    for (let m = this.wholeMask; m !== 0; m &= m - 1) count++;
    return count;
  }

  get freeVcpu(): number {
    return this.vcpuCapacity - this.vcpuUsed;
  }

  /** MiB */
  get freeMemoryMib(): number {
    return this.memoryCapacityMib - this.memoryUsedMib;
  }

  hostFits(vcpu: number, memoryMib: number): boolean {
    return this.vcpuCapacity - this.vcpuUsed >= vcpu && this.memoryCapacityMib - this.memoryUsedMib >= memoryMib;
  }

  /** Re-reads one accelerator's free bit after its holds changed. */
  refreshFree(accelerator: AcceleratorState): void {
    const bit = 1 << accelerator.bit;
    const wasFree = (this.freeMask & bit) !== 0;
    if (accelerator.isFree === wasFree) return;
    this.freeMask = (accelerator.isFree ? this.freeMask | bit : this.freeMask & ~bit) >>> 0;
    this.freeCount += accelerator.isFree ? 1 : -1;
  }

  /**
   * Applies (sign 1) or takes back (sign -1) one ledger entry. Never fails: ids the node does
   * not offer are skipped both ways, so the two stay symmetric (commit checks beforehand).
   * `listener` hears of every accelerator whose holds changed.
   */
  applyPod(pod: PodPlacement, sign: 1 | -1, listener?: AcceleratorListener): void {
    this.vcpuUsed += sign * pod.vcpu;
    this.memoryUsedMib += sign * pod.memoryMib;
    const hold = podHoldOf(pod);
    if (hold.kind === 'host') return;
    const ids = hold.kind === 'whole' ? hold.acceleratorIds : [hold.acceleratorId];
    for (const id of ids) {
      const accelerator = this.byId.get(id);
      if (!accelerator) continue;
      switch (hold.kind) {
        case 'whole':
          accelerator.wholeHolds += sign;
          break;
        case 'shared':
          accelerator.tokens += sign * hold.tokens;
          break;
        case 'slice':
          accelerator.sliceMemoryMib += sign * hold.memoryMib;
          accelerator.sliceCoresPercent += sign * hold.coresPercent;
          accelerator.slices += sign;
          break;
        case 'partition':
          accelerator.partitionHolds += sign;
          accelerator.mig?.adjust(hold.profile, hold.start, sign);
          break;
      }
      this.refreshFree(accelerator);
      listener?.refreshAccelerator(accelerator);
    }
  }
}
