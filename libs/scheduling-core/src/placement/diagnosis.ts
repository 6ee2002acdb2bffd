/**
 * Why a workload does not fit, in words a user can act on, and the largest block the pool
 * could give now in the request's own terms. Runs on the failure path only, against the
 * state without the failed attempt's tentative holds.
 */
import { SHARED_TOKENS_PER_ACCELERATOR } from '@gpufleet/capacity-core';
import { migProfileIndex } from '@gpufleet/device-inventory';
import type { AcceleratorState, NodeState } from './node-state';
import { describeDemand, describeHost, PodDemand } from './pod-demand';
import { Bucket, Domain, PoolIndex, Slotted } from './pool-index';
import { domainLabel, TOPOLOGY_LEVELS } from './topology-levels';

export interface FreeBlock {
  /** For the message: "2 on h100-3". */
  readonly brief: string;
  /** For PlacementFailure.largestFreeBlock: "2 whole accelerators on one node (h100-3)". */
  readonly full: string;
}

const NONE: FreeBlock = { brief: 'none', full: 'nothing free' };

function firstOf<T extends Slotted>(bucket: Bucket<T> | undefined): T | undefined {
  return bucket?.first();
}

function where(accelerator: AcceleratorState): string {
  return `${accelerator.node.name}/${accelerator.id}`;
}

export function largestFreeBlock(index: PoolIndex, demand: PodDemand): FreeBlock {
  switch (demand.kind) {
    case 'whole':
      return largestWhole(index.root);
    case 'shared':
      return largestShared(index);
    case 'slice':
      return largestSlice(index);
    case 'partition':
      return largestPartition(index);
    case 'host':
      return largestHost(index);
  }
}

function largestWhole(domain: Domain): FreeBlock {
  const k = domain.maxFree();
  const node = k > 0 ? firstOf(domain.byFree[k]) : undefined;
  if (!node) return { brief: '0', full: 'no free whole accelerator' };
  return { brief: `${k} on ${node.name}`, full: `${k} whole accelerator${k === 1 ? '' : 's'} on one node (${node.name})` };
}

function freeAcceleratorOf(root: Domain): AcceleratorState | undefined {
  const k = root.maxFree();
  const node = k > 0 ? firstOf(root.byFree[k]) : undefined;
  return node?.accelerators.find((a) => a.isFree);
}

function largestShared(index: PoolIndex): FreeBlock {
  let accelerator = freeAcceleratorOf(index.root);
  let tokens = SHARED_TOKENS_PER_ACCELERATOR;
  for (let f = index.sharedByFree.length - 1; !accelerator && f > 0; f--) {
    accelerator = firstOf(index.sharedByFree[f]);
    tokens = f;
  }
  if (!accelerator) return { brief: '0 tokens', full: 'no free shared tokens' };
  return { brief: `${tokens} tokens on ${where(accelerator)}`, full: `${tokens} shared tokens on one accelerator (${where(accelerator)})` };
}

function largestSlice(index: PoolIndex): FreeBlock {
  let accelerator = freeAcceleratorOf(index.root);
  for (let c = index.slicedByFreeCores.length - 1; !accelerator && c > 0; c--) {
    accelerator = firstOf(index.slicedByFreeCores[c]);
  }
  if (!accelerator) return { brief: 'no slice', full: 'no accelerator with free slice capacity' };
  const text = `${accelerator.freeSliceMemoryMib} MiB and ${accelerator.freeCoresPercent}% compute`;
  return { brief: `${text} on ${where(accelerator)}`, full: `a slice of ${text} on one accelerator (${where(accelerator)})` };
}

/** The largest profile (by memory slices) any GPU of the pool could still give. */
function largestPartition(index: PoolIndex): FreeBlock {
  let best: { accelerator: AcceleratorState; profile: string; size: number } | undefined;
  const consider = (profile: string, accelerator: AcceleratorState | undefined): void => {
    const mig = accelerator?.mig;
    if (!accelerator || !mig) return;
    const i = migProfileIndex(mig.geometry, profile);
    const size = i < 0 ? 0 : mig.geometry.profiles[i].size;
    if (!best || size > best.size) best = { accelerator, profile, size };
  };
  for (const [profile, set] of index.migIdle) consider(profile, firstOf(set));
  for (const [profile, byUsed] of index.migPlaceable) for (const set of byUsed) consider(profile, firstOf(set));
  if (!best) return { brief: 'no free MIG slices', full: 'no MIG partition free' };
  const b: { accelerator: AcceleratorState; profile: string } = best;
  return { brief: `${b.profile} on ${where(b.accelerator)}`, full: `a ${b.profile} MIG partition (${where(b.accelerator)})` };
}

function largestHost(index: PoolIndex): FreeBlock {
  let best: NodeState | undefined;
  for (const node of index.root.nodes) if (!best || node.freeVcpu > best.freeVcpu) best = node;
  if (!best) return NONE;
  const text = `${best.freeVcpu} vCPU and ${best.freeMemoryMib} MiB`;
  return { brief: `${text} on ${best.name}`, full: `${text} memory on one node (${best.name})` };
}

/** The pool has no single place for one pod of the pod set. */
export function noPlaceForPod(index: PoolIndex, demand: PodDemand, deviceExists: boolean): string {
  const pool = index.name;
  const block = largestFreeBlock(index, demand);
  const host = describeHost(demand);
  if (deviceExists && demand.kind !== 'host') {
    return `pool ${pool} has ${describeDemand(demand)} free, but not on a node that also has ${demand.vcpu} vCPU and ${demand.memoryMib} MiB memory free`;
  }
  switch (demand.kind) {
    case 'whole':
      return `no Ready node of pool ${pool} has ${demand.whole} free whole accelerator${demand.whole === 1 ? '' : 's'}${host} (largest free block: ${block.brief})`;
    case 'shared':
      return `no accelerator in pool ${pool} has ${demand.tokens} free shared tokens${host} (largest free block: ${block.brief})`;
    case 'slice':
      return `no accelerator in pool ${pool} has ${describeDemand(demand)} free${host} (largest free block: ${block.brief})`;
    case 'partition':
      return `no MIG-enabled accelerator in pool ${pool} can hold ${describeDemand(demand)}${host} (largest free block: ${block.brief})`;
    case 'host':
      return `no Ready node of pool ${pool} has ${describeDemand(demand)} free (largest free block: ${block.brief})`;
  }
}

/** One pod fits, but not all the pods the workload needs at once. */
export function notEnoughRoom(index: PoolIndex, podSet: string, demand: PodDemand, pods: number, otherPodSets: boolean): string {
  const each = `${describeDemand(demand)}${describeHost(demand)} each`;
  const room = demand.kind === 'whole' ? `; it has room for ${index.root.capacityFor(demand.whole)} such pods` : '';
  const together = otherPodSets ? ' together with the workload\'s other pod sets (all pods are placed together or none)' : '';
  return `pool ${index.name} cannot hold all ${pods} pods of pod set "${podSet}" (${each})${together}${room} (largest free block: ${largestFreeBlock(index, demand).brief})`;
}

export interface TopologyExplanation {
  readonly message: string;
  readonly largestFreeBlock: string;
}

/** A replica's pods fit in the pool, but no single domain of the required level holds them. */
export function topologyUnsatisfiable(index: PoolIndex, podSet: string, demand: PodDemand, size: number, level: number): TopologyExplanation {
  const levelName = TOPOLOGY_LEVELS[level];
  const need = `pod set "${podSet}": ${size} pods × ${describeDemand(demand)} need one ${levelName}`;
  if (demand.kind !== 'whole') {
    return {
      message: `${need}; no ${levelName} of pool ${index.name} has room for all of them`,
      largestFreeBlock: largestFreeBlock(index, demand).full,
    };
  }
  let best: Domain | undefined;
  let bestCapacity = -1;
  for (const domain of index.levels[level].values()) {
    const capacity = domain.capacityFor(demand.whole);
    if (capacity > bestCapacity || (capacity === bestCapacity && best && domain.key < best.key)) {
      best = domain;
      bestCapacity = capacity;
    }
  }
  if (!best) return { message: `${need}; pool ${index.name} has no Ready node`, largestFreeBlock: NONE.full };
  const label = domainLabel(level, best.key);
  const fullNodes = [...best.nodes].every((n) => n.wholeCapacity === demand.whole);
  const has = fullNodes
    ? `${bestCapacity} fully free node${bestCapacity === 1 ? '' : 's'}`
    : `room for ${bestCapacity} such pod${bestCapacity === 1 ? '' : 's'}`;
  return {
    message: `${need}; the best ${levelName} has ${has} (${label})`,
    largestFreeBlock: `${bestCapacity} pod${bestCapacity === 1 ? '' : 's'} × ${describeDemand(demand)} in one ${levelName} (${label})`,
  };
}
