/**
 * The indexes that keep placement from scanning the fleet. Per pool: Ready nodes bucketed by
 * free whole accelerators, per topology domain as well (so "a rack with two fully free nodes"
 * is a bucket count), partly shared accelerators by free tokens, partly sliced ones by free
 * compute, and MIG GPUs per profile by whether an idle partition or free slices can take it.
 * Every mutation of a node updates the buckets it sits in, in O(1) per bucket.
 */
import { TOPOLOGY_LEVELS } from './topology-levels';
import { AcceleratorState, NodeState } from './node-state';

/** Something a Bucket holds: it keeps its own position in each bucket, by slot. */
export interface Slotted {
  /** slots[s]: position in the bucket it was filed in under slot s; -1 or absent when none. */
  readonly slots: number[];
}

/**
 * An unordered set kept as a dense array, with each member's position stored on the member.
 * Placement reads the first members of a bucket over and over while holds move members in and
 * out: a JS Set would leave deleted entries at its front for every read to step over, and a
 * position Map of fleet size thrashes on rehash. A member is filed under a slot, one per kind
 * of bucket it can be in at a time (a node: one per domain; an accelerator: one per index).
 */
export class Bucket<T extends Slotted> implements Iterable<T> {
  private readonly items: T[] = [];
  private readonly itemSlots: number[] = [];

  get size(): number {
    return this.items.length;
  }

  has(item: T, slot: number): boolean {
    const at = item.slots[slot];
    return at !== undefined && at >= 0 && this.items[at] === item;
  }

  first(): T | undefined {
    return this.items[0];
  }

  add(item: T, slot: number): void {
    if (this.has(item, slot)) return;
    item.slots[slot] = this.items.length;
    this.items.push(item);
    this.itemSlots.push(slot);
  }

  delete(item: T, slot: number): boolean {
    if (!this.has(item, slot)) return false;
    const at = item.slots[slot];
    const last = this.items.pop() as T;
    const lastSlot = this.itemSlots.pop() as number;
    if (last !== item) {
      this.items[at] = last;
      this.itemSlots[at] = lastSlot;
      last.slots[lastSlot] = at;
    }
    item.slots[slot] = -1;
    return true;
  }

  /** Members now; safe to mutate the bucket while walking the copy. */
  snapshot(): T[] {
    return [...this.items];
  }

  /** Do not add or delete members while iterating (see snapshot). */
  [Symbol.iterator](): Iterator<T> {
    return this.items[Symbol.iterator]();
  }
}

/** Bucket slots of an accelerator: one shared bucket, one sliced, two per MIG profile. */
const SHARED_SLOT = 0;
const SLICED_SLOT = 1;
const idleSlot = (profileIndex: number): number => 2 + 2 * profileIndex;
const placeableSlot = (profileIndex: number): number => 3 + 2 * profileIndex;
export const acceleratorSlots = { SHARED_SLOT, SLICED_SLOT, idleSlot, placeableSlot };

/** Nodes of one topology domain (or of the whole pool), bucketed by free whole accelerators. */
export class Domain {
  readonly nodes = new Set<NodeState>();
  /** byFree[k]: nodes with exactly k free whole accelerators. */
  readonly byFree: Bucket<NodeState>[] = [];

  /** The node slot its buckets use: 0 for the root, level + 1 for a topology domain. */
  readonly slot: number;

  constructor(
    /** Index into TOPOLOGY_LEVELS; -1 for a pool's root. */
    readonly levelIndex: number,
    readonly key: string,
  ) {
    this.slot = levelIndex + 1;
  }

  count(free: number): number {
    return this.byFree[free]?.size ?? 0;
  }

  /** Pods of `whole` accelerators the domain's nodes could take, ignoring CPU and memory. */
  capacityFor(whole: number): number {
    let pods = 0;
    for (let k = whole; k < this.byFree.length; k++) {
      const size = this.byFree[k].size;
      if (size > 0) pods += Math.floor(k / whole) * size;
    }
    return pods;
  }

  /** The most free whole accelerators on one node, -1 with no node. */
  maxFree(): number {
    for (let k = this.byFree.length - 1; k >= 0; k--) if (this.byFree[k].size > 0) return k;
    return -1;
  }

  file(node: NodeState, free: number): void {
    while (this.byFree.length <= free) this.byFree.push(new Bucket());
    this.byFree[free].add(node, this.slot);
  }

  unfile(node: NodeState, free: number): void {
    this.byFree[free]?.delete(node, this.slot);
  }
}

export class PoolIndex {
  readonly root: Domain;
  /** Per topology level, the pool's domains by key. */
  readonly levels: Map<string, Domain>[] = TOPOLOGY_LEVELS.map(() => new Map<string, Domain>());
  /** Per topology level, domains with more than one node (0: the level is per node here). */
  readonly multiNodeDomains: number[] = TOPOLOGY_LEVELS.map(() => 0);
  /** sharedByFree[f]: accelerators in shared use with f free tokens (1-9). */
  readonly sharedByFree: Bucket<AcceleratorState>[] = Array.from({ length: 11 }, () => new Bucket<AcceleratorState>());
  /** slicedByFreeCores[c]: accelerators in sliced use with c percent compute free. */
  readonly slicedByFreeCores: Bucket<AcceleratorState>[] = Array.from({ length: 101 }, () => new Bucket<AcceleratorState>());
  /** Per MIG profile: GPUs with an idle existing partition of it. */
  readonly migIdle = new Map<string, Bucket<AcceleratorState>>();
  /** Per MIG profile: GPUs whose free slices take a new one, by slices already taken. */
  readonly migPlaceable = new Map<string, Bucket<AcceleratorState>[]>();

  constructor(readonly name: string) {
    this.root = new Domain(-1, name);
  }

  get readyNodes(): number {
    return this.root.nodes.size;
  }

  /** Lists a Ready node and its accelerators. */
  add(node: NodeState): void {
    node.indexed = true;
    node.domains = node.domainKeys.map((key, level) => {
      const domains = this.levels[level];
      let domain = domains.get(key);
      if (!domain) {
        domain = new Domain(level, key);
        domains.set(key, domain);
      }
      return domain;
    });
    node.filedFree = node.freeCount;
    for (const domain of [this.root, ...node.domains]) {
      domain.nodes.add(node);
      domain.file(node, node.freeCount);
      if (domain.levelIndex >= 0 && domain.nodes.size === 2) this.multiNodeDomains[domain.levelIndex]++;
    }
    for (const accelerator of node.accelerators) this.refreshAccelerator(accelerator);
  }

  remove(node: NodeState): void {
    if (!node.indexed) return;
    for (const domain of [this.root, ...node.domains]) {
      domain.nodes.delete(node);
      domain.unfile(node, node.filedFree);
      if (domain.levelIndex >= 0 && domain.nodes.size === 1) this.multiNodeDomains[domain.levelIndex]--;
      if (domain.nodes.size === 0 && domain.levelIndex >= 0) this.levels[domain.levelIndex].delete(domain.key);
    }
    for (const accelerator of node.accelerators) this.unlist(accelerator);
    node.domains = [];
    node.filedFree = -1;
    node.indexed = false;
  }

  /** Re-files a node whose free whole count may have changed. */
  refreshNode(node: NodeState): void {
    if (!node.indexed || node.filedFree === node.freeCount) return;
    this.root.unfile(node, node.filedFree);
    this.root.file(node, node.freeCount);
    for (const domain of node.domains) {
      domain.unfile(node, node.filedFree);
      domain.file(node, node.freeCount);
    }
    node.filedFree = node.freeCount;
  }

  /** Re-files an accelerator whose holds changed. */
  refreshAccelerator(accelerator: AcceleratorState): void {
    this.unlist(accelerator);
    if (!accelerator.node.indexed) return;
    if (accelerator.tokens > 0) {
      const free = accelerator.freeTokens;
      if (free > 0 && free < this.sharedByFree.length) this.list(this.sharedByFree[free], accelerator, SHARED_SLOT);
    }
    if (accelerator.slices > 0) {
      const free = accelerator.freeCoresPercent;
      if (free >= 0) this.list(this.slicedByFreeCores[free], accelerator, SLICED_SLOT);
    }
    const mig = accelerator.partitionable;
    if (!mig) return;
    const used = mig.usedSlices;
    mig.geometry.profiles.forEach((profile, index) => {
      if (mig.idlePartition(index)) this.list(this.setOf(this.migIdle, profile.name), accelerator, idleSlot(index));
      if (mig.canPlaceNew(index)) {
        let byUsed = this.migPlaceable.get(profile.name);
        if (!byUsed) {
          byUsed = [];
          this.migPlaceable.set(profile.name, byUsed);
        }
        while (byUsed.length <= used) byUsed.push(new Bucket());
        this.list(byUsed[used], accelerator, placeableSlot(index));
      }
    });
  }

  private setOf(map: Map<string, Bucket<AcceleratorState>>, key: string): Bucket<AcceleratorState> {
    let set = map.get(key);
    if (!set) {
      set = new Bucket();
      map.set(key, set);
    }
    return set;
  }

  private list(bucket: Bucket<AcceleratorState>, accelerator: AcceleratorState, slot: number): void {
    bucket.add(accelerator, slot);
    accelerator.memberships.push(bucket);
    accelerator.membershipSlots.push(slot);
  }

  private unlist(accelerator: AcceleratorState): void {
    const { memberships, membershipSlots } = accelerator;
    if (memberships.length === 0) return;
    for (let i = 0; i < memberships.length; i++) memberships[i].delete(accelerator, membershipSlots[i]);
    memberships.length = 0;
    membershipSlots.length = 0;
  }
}
