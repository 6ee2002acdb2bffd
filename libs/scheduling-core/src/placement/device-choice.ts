/**
 * Where one pod goes within one domain (or the whole pool): which node and which devices.
 *
 * Whole accelerators are always bin-packed: the node with the fewest free accelerators that
 * still fits wins, so fully free nodes stay free for 8-accelerator pods and multi-node gangs.
 * Within the node the best-connected set is taken (see Interconnect). Shared tokens, slices
 * and MIG partitions follow the queue's packing: `binpack` picks the most-used accelerator
 * that fits, `spread` the least-used; a fully free accelerator counts as least used and is
 * taken from the node with the fewest (binpack) or most (spread) free accelerators.
 * Existing idle MIG partitions of the profile are used before new ones are carved.
 */
import type { PartitionPlacement } from '@gpufleet/contracts';
import { migProfileIndex } from '@gpufleet/device-inventory';
import type { Packing } from '../placer';
import { AcceleratorState, NodeState } from './node-state';
import { PodDemand, sliceMemoryOn } from './pod-demand';
import { Domain, PoolIndex } from './pool-index';

export interface DeviceChoice {
  readonly node: NodeState;
  readonly acceleratorIds: string[];
  readonly sharedTokens: number;
  /** MiB */
  readonly sliceMemoryMib: number;
  readonly sliceCoresPercent: number;
  readonly partition: PartitionPlacement | undefined;
}

function choice(node: NodeState, acceleratorIds: string[], extra: Partial<DeviceChoice> = {}): DeviceChoice {
  return { node, acceleratorIds, sharedTokens: 0, sliceMemoryMib: 0, sliceCoresPercent: 0, partition: undefined, ...extra };
}

/** Whether the pod may go on the node: not fenced for this request, and its vCPU and memory free. */
const fits = (node: NodeState, demand: PodDemand): boolean => !node.fenced && node.hostFits(demand.vcpu, demand.memoryMib);

export function chooseDevices(index: PoolIndex, domain: Domain, demand: PodDemand, packing: Packing): DeviceChoice | undefined {
  switch (demand.kind) {
    case 'whole':
      return chooseWhole(domain, demand);
    case 'host':
      return chooseHost(domain, demand);
    case 'shared':
      return domain === index.root ? sharedInPool(index, demand, packing) : bestInDomain(domain, demand, packing);
    case 'slice':
      return domain === index.root ? sliceInPool(index, demand, packing) : bestInDomain(domain, demand, packing);
    case 'partition':
      return domain === index.root ? partitionInPool(index, demand, packing) : bestInDomain(domain, demand, packing);
  }
}

function chooseWhole(domain: Domain, demand: PodDemand): DeviceChoice | undefined {
  const n = demand.whole;
  for (let k = n; k < domain.byFree.length; k++) {
    for (const node of domain.byFree[k]) {
      if (!fits(node, demand)) continue;
      const mask = node.interconnect.bestSet(node.freeMask, n);
      const ids: string[] = [];
      for (let m = mask, bit = 0; m !== 0; m >>>= 1, bit++) if (m & 1) ids.push(node.accelerators[bit].id);
      return choice(node, ids);
    }
  }
  return undefined;
}

/** CPU-only pods go where accelerators are already taken, to leave free GPU nodes alone. */
function chooseHost(domain: Domain, demand: PodDemand): DeviceChoice | undefined {
  for (const bucket of domain.byFree) for (const node of bucket) if (fits(node, demand)) return choice(node, []);
  return undefined;
}

/** A fully free accelerator (big enough for a slice) from the node with the fewest (binpack) or most (spread) free. */
function freshAccelerator(root: Domain, demand: PodDemand, packing: Packing): AcceleratorState | undefined {
  const last = root.byFree.length - 1;
  for (let i = 1; i <= last; i++) {
    const k = packing === 'spread' ? last + 1 - i : i;
    for (const node of root.byFree[k]) {
      if (!fits(node, demand)) continue;
      const accelerator = loneFreeOn(node, demand);
      if (accelerator) return accelerator;
    }
  }
  return undefined;
}

function loneFreeOn(node: NodeState, demand: PodDemand): AcceleratorState | undefined {
  const lone = node.accelerators[node.interconnect.loneFree(node.freeMask)];
  if (!lone || demand.kind !== 'slice') return lone;
  if (sliceMemoryOn(demand, lone.memoryMib) <= lone.memoryMib) return lone;
  // Mixed memory sizes on one node: any free accelerator large enough.
  return node.accelerators.find((a) => a.isFree && sliceMemoryOn(demand, a.memoryMib) <= a.memoryMib);
}

function sharedChoice(accelerator: AcceleratorState, demand: PodDemand): DeviceChoice {
  return choice(accelerator.node, [accelerator.id], { sharedTokens: demand.tokens });
}

function sharedInPool(index: PoolIndex, demand: PodDemand, packing: Packing): DeviceChoice | undefined {
  const partly = (): AcceleratorState | undefined => {
    const buckets = index.sharedByFree;
    for (let i = demand.tokens; i < buckets.length; i++) {
      const free = packing === 'spread' ? buckets.length - 1 - (i - demand.tokens) : i;
      for (const a of buckets[free]) if (fits(a.node, demand)) return a;
    }
    return undefined;
  };
  const accelerator = packing === 'spread' ? freshAccelerator(index.root, demand, packing) ?? partly() : partly() ?? freshAccelerator(index.root, demand, packing);
  return accelerator && sharedChoice(accelerator, demand);
}

function sliceFits(accelerator: AcceleratorState, demand: PodDemand): boolean {
  return (
    accelerator.freeCoresPercent >= demand.sliceCoresPercent &&
    accelerator.freeSliceMemoryMib >= sliceMemoryOn(demand, accelerator.memoryMib)
  );
}

function sliceChoice(accelerator: AcceleratorState, demand: PodDemand): DeviceChoice {
  return choice(accelerator.node, [accelerator.id], {
    sliceMemoryMib: sliceMemoryOn(demand, accelerator.memoryMib),
    sliceCoresPercent: demand.sliceCoresPercent,
  });
}

function sliceInPool(index: PoolIndex, demand: PodDemand, packing: Packing): DeviceChoice | undefined {
  const partly = (): AcceleratorState | undefined => {
    const buckets = index.slicedByFreeCores;
    const from = demand.sliceCoresPercent;
    for (let i = from; i < buckets.length; i++) {
      const free = packing === 'spread' ? buckets.length - 1 - (i - from) : i;
      for (const a of buckets[free]) if (sliceFits(a, demand) && fits(a.node, demand)) return a;
    }
    return undefined;
  };
  const accelerator = packing === 'spread' ? freshAccelerator(index.root, demand, packing) ?? partly() : partly() ?? freshAccelerator(index.root, demand, packing);
  return accelerator && sliceChoice(accelerator, demand);
}

function partitionChoice(accelerator: AcceleratorState, profileIndex: number, start: number): DeviceChoice {
  const mig = accelerator.mig;
  const profile = mig ? mig.geometry.profiles[profileIndex].name : '';
  return choice(accelerator.node, [], { partition: { acceleratorId: accelerator.id, profile, start } });
}

/** An idle existing partition, or a new one in free slices; undefined when the GPU takes neither. */
function partitionOn(accelerator: AcceleratorState, demand: PodDemand): DeviceChoice | undefined {
  const mig = accelerator.partitionable;
  if (!mig) return undefined;
  const profileIndex = migProfileIndex(mig.geometry, demand.profile);
  if (profileIndex < 0) return undefined;
  const idle = mig.idlePartition(profileIndex);
  if (idle) return partitionChoice(accelerator, profileIndex, idle.start);
  const start = mig.bestNewStart(profileIndex);
  return start < 0 ? undefined : partitionChoice(accelerator, profileIndex, start);
}

function partitionInPool(index: PoolIndex, demand: PodDemand, packing: Packing): DeviceChoice | undefined {
  for (const a of index.migIdle.get(demand.profile) ?? []) {
    if (fits(a.node, demand)) return partitionOn(a, demand);
  }
  const byUsed = index.migPlaceable.get(demand.profile) ?? [];
  for (let i = 0; i < byUsed.length; i++) {
    const used = packing === 'spread' ? i : byUsed.length - 1 - i;
    for (const a of byUsed[used]) {
      if (!fits(a.node, demand)) continue;
      const placed = partitionOn(a, demand);
      if (placed) return placed;
    }
  }
  return undefined;
}

/**
 * Shared, sliced and MIG pods inside one topology domain: a scan of the domain's nodes,
 * ranked like the pool-wide indexes rank them. Domains are racks or smaller in practice.
 */
function bestInDomain(domain: Domain, demand: PodDemand, packing: Packing): DeviceChoice | undefined {
  let best: DeviceChoice | undefined;
  let bestRank = Number.POSITIVE_INFINITY;
  const consider = (candidate: DeviceChoice | undefined, usedness: number, preferred = false): void => {
    if (!candidate) return;
    // Lower rank wins. binpack: the most used device, then the fullest node; spread: the reverse.
    const nodeRank = candidate.node.freeCount / 64;
    const rank = (preferred ? -1e9 : 0) + (packing === 'spread' ? usedness - nodeRank : -usedness + nodeRank);
    if (rank < bestRank) {
      best = candidate;
      bestRank = rank;
    }
  };
  for (const node of domain.nodes) {
    if (!fits(node, demand)) continue;
    for (const a of node.accelerators) {
      if (a.isFree && a !== loneFreeOn(node, demand)) continue;
      if (demand.kind === 'shared') {
        if (a.freeTokens >= demand.tokens) consider(sharedChoice(a, demand), a.tokens);
      } else if (demand.kind === 'slice') {
        if (sliceFits(a, demand)) consider(sliceChoice(a, demand), a.sliceCoresPercent);
      } else if (a.mig) {
        const placed = partitionOn(a, demand);
        // An idle existing partition beats carving a new one whatever the packing.
        const idle = placed?.partition && a.mig.existingAt(migProfileIndex(a.mig.geometry, demand.profile), placed.partition.start);
        consider(placed, a.mig.usedSlices / a.mig.geometry.memorySlices, idle !== undefined);
      }
    }
  }
  return best;
}
