/**
 * A from-scratch check of the engine's incremental state: every node re-derived from its
 * inventory and ledger entries, and every index bucket checked against it. For tests and for
 * operators chasing a suspected bookkeeping bug; O(fleet), never on the hot path.
 */
import type { PodPlacement } from '@gpufleet/contracts';
import { AcceleratorState, NodeState } from './node-state';
import { acceleratorSlots, Bucket, PoolIndex } from './pool-index';

function accelerationSignature(a: AcceleratorState): string {
  const mig = a.mig;
  const migPart = mig ? `${mig.occupied}/${mig.mediaHolds}/${mig.existing.map((p) => p.holds).join(',')}` : '';
  return `${a.wholeHolds}/${a.tokens}/${a.sliceMemoryMib}/${a.sliceCoresPercent}/${a.slices}/${a.partitionHolds}/${migPart}`;
}

/** The buckets (with slots) an accelerator belongs in, given its holds. */
function expectedMemberships(index: PoolIndex, a: AcceleratorState): [Bucket<AcceleratorState> | undefined, number][] {
  const expected: [Bucket<AcceleratorState> | undefined, number][] = [];
  if (a.tokens > 0 && a.freeTokens > 0 && a.freeTokens < index.sharedByFree.length) {
    expected.push([index.sharedByFree[a.freeTokens], acceleratorSlots.SHARED_SLOT]);
  }
  if (a.slices > 0 && a.freeCoresPercent >= 0) expected.push([index.slicedByFreeCores[a.freeCoresPercent], acceleratorSlots.SLICED_SLOT]);
  const mig = a.partitionable;
  if (mig) {
    mig.geometry.profiles.forEach((profile, i) => {
      if (mig.idlePartition(i)) expected.push([index.migIdle.get(profile.name), acceleratorSlots.idleSlot(i)]);
      if (mig.canPlaceNew(i)) expected.push([index.migPlaceable.get(profile.name)?.[mig.usedSlices], acceleratorSlots.placeableSlot(i)]);
    });
  }
  return expected;
}

export function indexProblems(
  nodes: Iterable<NodeState>,
  poolOf: (pool: string) => PoolIndex | undefined,
  podsOn: (node: string) => readonly PodPlacement[],
): string[] {
  const problems: string[] = [];
  const pools = new Set<PoolIndex>();
  for (const node of nodes) {
    const fresh = new NodeState(node.inventory, node.pool, node.ready);
    for (const pod of podsOn(node.name)) fresh.applyPod(pod, 1);
    if (fresh.vcpuUsed !== node.vcpuUsed || fresh.memoryUsedMib !== node.memoryUsedMib) {
      problems.push(`node ${node.name}: vCPU/memory used ${node.vcpuUsed}/${node.memoryUsedMib}, ledger says ${fresh.vcpuUsed}/${fresh.memoryUsedMib}`);
    }
    if (fresh.freeMask !== node.freeMask || fresh.freeCount !== node.freeCount) {
      problems.push(`node ${node.name}: free mask ${node.freeMask} (${node.freeCount}), ledger says ${fresh.freeMask} (${fresh.freeCount})`);
    }
    node.accelerators.forEach((a, i) => {
      const expected = accelerationSignature(fresh.accelerators[i]);
      if (accelerationSignature(a) !== expected) problems.push(`node ${node.name} ${a.id}: holds ${accelerationSignature(a)}, ledger says ${expected}`);
    });

    const index = poolOf(node.pool);
    if (node.ready !== node.indexed) problems.push(`node ${node.name}: ready ${node.ready} but indexed ${node.indexed}`);
    if (!node.indexed) {
      if (node.accelerators.some((a) => a.memberships.length > 0)) problems.push(`node ${node.name}: not indexed but in accelerator buckets`);
      continue;
    }
    if (!index) {
      problems.push(`node ${node.name}: indexed in missing pool ${node.pool}`);
      continue;
    }
    pools.add(index);
    if (node.filedFree !== node.freeCount) problems.push(`node ${node.name}: filed under ${node.filedFree} free, has ${node.freeCount}`);
    for (const domain of [index.root, ...node.domains]) {
      if (!domain.nodes.has(node) || !domain.byFree[node.freeCount]?.has(node, domain.slot)) {
        problems.push(`node ${node.name}: missing from bucket ${node.freeCount} of domain ${domain.key}`);
      }
    }
    node.domains.forEach((domain, level) => {
      if (domain.key !== node.domainKeys[level] || index.levels[level].get(domain.key) !== domain) {
        problems.push(`node ${node.name}: domain ${domain.key} at level ${level} is not the pool's`);
      }
    });
    for (const a of node.accelerators) {
      const expected = expectedMemberships(index, a);
      const missing = expected.filter(([bucket, slot]) => !bucket?.has(a, slot)).length;
      if (missing > 0 || expected.length !== a.memberships.length) {
        problems.push(`node ${node.name} ${a.id}: in ${a.memberships.length} buckets, expected ${expected.length} (${missing} missing)`);
      }
    }
  }
  for (const index of pools) {
    const filed = index.root.byFree.reduce((sum, bucket) => sum + bucket.size, 0);
    if (filed !== index.root.nodes.size) problems.push(`pool ${index.name}: ${filed} nodes filed, ${index.root.nodes.size} listed`);
    index.levels.forEach((domains, level) => {
      const multi = [...domains.values()].filter((d) => d.nodes.size > 1).length;
      if (multi !== index.multiNodeDomains[level]) problems.push(`pool ${index.name}: level ${level} counts ${index.multiNodeDomains[level]} multi-node domains, has ${multi}`);
    });
    for (const domains of index.levels) {
      for (const domain of domains.values()) {
        const inBuckets = domain.byFree.reduce((sum, bucket) => sum + bucket.size, 0);
        if (inBuckets !== domain.nodes.size || domain.nodes.size === 0) {
          problems.push(`pool ${index.name}: domain ${domain.key} files ${inBuckets} of ${domain.nodes.size} nodes`);
        }
      }
    }
  }
  return problems;
}
