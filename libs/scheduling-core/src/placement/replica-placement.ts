/**
 * Placing the pods of one replica, honouring its topology: with a required level all pods land
 * in one domain of that level; with a preferred level that level is tried first, then each
 * wider one, then (without a required level) anywhere in the pool. Replicas are placed one
 * after another and each finds its own domain.
 */
import type { PodPlacement } from '@gpufleet/contracts';
import type { Packing } from '../placer';
import { chooseDevices, DeviceChoice } from './device-choice';
import { PodDemand } from './pod-demand';
import { Domain, PoolIndex } from './pool-index';
import { TentativePlacement } from './tentative-placement';
import { TOPOLOGY_LEVELS } from './topology-levels';

export interface ReplicaRequest {
  readonly podSet: string;
  readonly replica: number;
  /** Pods in the replica. */
  readonly size: number;
  readonly demand: PodDemand;
  /** Topology level indexes; -1 for none. */
  readonly required: number;
  readonly preferred: number;
  readonly packing: Packing;
  /** Node-level domains a single-pod replica tries first (PlacementRequest.preferredNodes). */
  readonly preferredNodes?: readonly Domain[];
}

/** Feasible domains are tried in batches of this many, tightest first. */
const DOMAIN_BATCH = 32;

export function toPlacement(request: ReplicaRequest, pod: number, choice: DeviceChoice): PodPlacement {
  return {
    podSet: request.podSet,
    replica: request.replica,
    pod,
    node: choice.node.name,
    acceleratorIds: choice.acceleratorIds,
    sharedTokens: choice.sharedTokens,
    sliceMemoryMib: choice.sliceMemoryMib,
    sliceCoresPercent: choice.sliceCoresPercent,
    partition: choice.partition,
    vcpu: request.demand.vcpu,
    memoryMib: request.demand.memoryMib,
  };
}

/** Holds every pod of the replica, or none. */
export function placeReplica(index: PoolIndex, request: ReplicaRequest, tentative: TentativePlacement): boolean {
  // One pod fits any topology level, so a preferred node is only ever a better choice.
  if (request.size === 1) for (const domain of request.preferredNodes ?? []) if (placeInDomain(index, domain, request, tentative)) return true;
  if (request.size > 1 && (request.required >= 0 || request.preferred >= 0)) {
    const { required, preferred } = request;
    const first = preferred >= 0 && (required < 0 || preferred <= required) ? preferred : required;
    const last = required >= 0 ? required : TOPOLOGY_LEVELS.length - 1;
    for (let level = first; level <= last; level++) if (placeAtLevel(index, level, request, tentative)) return true;
    if (required >= 0) return false;
  }
  return placeInDomain(index, index.root, request, tentative);
}

/** Holds every pod of the replica inside `domain`, or none. */
export function placeInDomain(index: PoolIndex, domain: Domain, request: ReplicaRequest, tentative: TentativePlacement): boolean {
  const mark = tentative.mark();
  for (let pod = 0; pod < request.size; pod++) {
    const choice = chooseDevices(index, domain, request.demand, request.packing);
    if (!choice) {
      tentative.undoTo(mark);
      return false;
    }
    tentative.hold(choice.node, toPlacement(request, pod, choice));
  }
  return true;
}

function placeAtLevel(index: PoolIndex, level: number, request: ReplicaRequest, tentative: TentativePlacement): boolean {
  for (const domain of candidateDomains(index, level, request)) {
    const mark = tentative.mark();
    if (!placeInDomain(index, domain, request, tentative)) continue;
    // A preferred level narrower than the required one need not nest inside it.
    if (request.required < 0 || request.required === level || inOneDomain(tentative, mark, request.required)) return true;
    tentative.undoTo(mark);
  }
  return false;
}

function inOneDomain(tentative: TentativePlacement, mark: number, level: number): boolean {
  const key = tentative.held[mark]?.node.domainKeys[level];
  for (let i = mark + 1; i < tentative.held.length; i++) if (tentative.held[i].node.domainKeys[level] !== key) return false;
  return true;
}

/**
 * Domains of the level that may hold the replica. For whole accelerators the per-domain
 * buckets tell exactly how many pods of N a domain takes (CPU and memory aside), so only
 * feasible domains are offered, the tightest first: that keeps roomy racks free for larger
 * gangs. Other modes have no such count; their domains are offered as the nodes list them.
 */
function* candidateDomains(index: PoolIndex, level: number, request: ReplicaRequest): Generator<Domain> {
  if (request.demand.kind !== 'whole') {
    const seen = new Set<Domain>();
    for (const node of index.root.nodes) {
      const domain = node.domains[level];
      if (seen.has(domain)) continue;
      seen.add(domain);
      yield domain;
    }
    return;
  }
  const n = request.demand.whole;
  const needed = request.size;
  const seen = new Set<Domain>();
  // Each round gathers a batch of feasible domains without changing anything, then offers
  // them; a failed attempt reorders buckets, so the next round scans afresh (skipping `seen`).
  for (;;) {
    const batch = feasibleBatch(index, level, n, needed, seen);
    if (batch.length === 0) return;
    batch.sort((a, b) => a.capacity - b.capacity);
    for (const { domain } of batch) {
      seen.add(domain);
      yield domain;
    }
  }
}

interface FeasibleDomain {
  readonly domain: Domain;
  readonly capacity: number;
}

/**
 * Up to DOMAIN_BATCH unseen domains that take `needed` pods of `whole`, stopping early at an
 * exact fit (nothing is tighter). Scans whichever is shorter: the level's domains, or the
 * nodes with enough free accelerators. Where every domain of the level is a single node (an
 * NVLink domain per HGX board, say), a domain takes the replica only through a node with
 * `whole × needed` free, so only those nodes are looked at.
 */
function feasibleBatch(index: PoolIndex, level: number, whole: number, needed: number, seen: Set<Domain>): FeasibleDomain[] {
  const batch: FeasibleDomain[] = [];
  const consider = (domain: Domain): boolean => {
    if (seen.has(domain) || batch.some((b) => b.domain === domain)) return false;
    const capacity = domain.capacityFor(whole);
    if (capacity < needed) return false;
    batch.push({ domain, capacity });
    return capacity === needed || batch.length >= DOMAIN_BATCH;
  };
  const root = index.root;
  const singleNodeDomains = index.multiNodeDomains[level] === 0;
  const firstBucket = singleNodeDomains ? whole * needed : whole;
  let candidateNodes = 0;
  for (let k = firstBucket; k < root.byFree.length; k++) candidateNodes += root.count(k);
  if (!singleNodeDomains && index.levels[level].size <= candidateNodes) {
    for (const domain of index.levels[level].values()) if (consider(domain)) break;
    return batch;
  }
  for (let k = firstBucket; k < root.byFree.length; k++) {
    for (const node of root.byFree[k]) if (consider(node.domains[level])) return batch;
  }
  return batch;
}
