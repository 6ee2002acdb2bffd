/**
 * How well a node's accelerators talk to each other, for choosing which N of the free ones a
 * whole-accelerator pod gets. Models are shared by every node with the same links (one per
 * node shape in a homogeneous fleet) and memoise the best set per free mask, so a placement
 * costs a map lookup once a shape has been seen.
 */
import { Accelerator, LinkType, NodeInventory } from '@gpufleet/contracts';

/** PCIe distance of a link as `nvidia-smi topo -m` ranks them; fabric links count 0. */
const HOPS: Partial<Record<LinkType, number>> = {
  [LinkType.LINK_TYPE_NVLINK]: 0,
  [LinkType.LINK_TYPE_XGMI]: 0,
  [LinkType.LINK_TYPE_HCCS]: 0,
  [LinkType.LINK_TYPE_PIX]: 1,
  [LinkType.LINK_TYPE_PXB]: 2,
  [LinkType.LINK_TYPE_PHB]: 3,
  [LinkType.LINK_TYPE_NODE]: 4,
  [LinkType.LINK_TYPE_SYS]: 5,
};
const HOPS_SAME_NUMA = 4;
const HOPS_ACROSS_NUMA = 5;
const FABRIC = new Set<LinkType>([LinkType.LINK_TYPE_NVLINK, LinkType.LINK_TYPE_XGMI, LinkType.LINK_TYPE_HCCS]);
/** PCIe links close enough that a NIC and a GPU do GPUDirect RDMA without the CPU. */
const NEAR_NIC = new Set<LinkType>([LinkType.LINK_TYPE_PIX, LinkType.LINK_TYPE_PXB]);

/** Exhaustive search above this many candidate sets would cost more than it saves. */
const MAX_ENUMERATED_SETS = 20_000;
const MAX_MEMOISED_MASKS = 1 << 16;
const MAX_MODELS = 4096;

/** A set's quality, compared field by field, larger first (hops are stored negated). */
interface SetScore {
  fullyFabric: number;
  nvlinks: number;
  negHops: number;
  nicAffinity: number;
}

function better(a: SetScore, b: SetScore): boolean {
  if (a.fullyFabric !== b.fullyFabric) return a.fullyFabric > b.fullyFabric;
  if (a.nvlinks !== b.nvlinks) return a.nvlinks > b.nvlinks;
  if (a.negHops !== b.negHops) return a.negHops > b.negHops;
  return a.nicAffinity > b.nicAffinity;
}

export function popcount(mask: number): number {
  let m = mask >>> 0;
  let count = 0;
  while (m !== 0) {
    m &= m - 1;
    count++;
  }
  return count;
}

/** Indexes of the set bits, ascending. */
export function bitsOf(mask: number): number[] {
  const bits: number[] = [];
  for (let m = mask >>> 0, i = 0; m !== 0; m >>>= 1, i++) if (m & 1) bits.push(i);
  return bits;
}

function combinations(n: number, k: number): number {
  let c = 1;
  for (let i = 0; i < k; i++) c = (c * (n - i)) / (i + 1);
  return c;
}

const models = new Map<string, Interconnect>();

export class Interconnect {
  private readonly memo = new Map<number, number>();

  private constructor(
    /** Accelerators modelled, in the node's offered order (bit i = accelerator i). */
    readonly size: number,
    private readonly fabric: Uint8Array,
    private readonly nvlinks: Uint16Array,
    private readonly hops: Uint8Array,
    /** Per accelerator: 2 = PCIe-near an ACTIVE NIC, 1 = same NUMA node as one, 0 = neither. */
    private readonly nicAffinity: Uint8Array,
    /** Every pair and every accelerator alike: any set is as good as any other. */
    private readonly uniform: boolean,
  ) {}

  /** The model of these accelerators of the node (shared with nodes linked the same way). */
  static of(inventory: NodeInventory, offered: readonly Accelerator[]): Interconnect {
    const n = offered.length;
    const position = new Map<string, number>(offered.map((a, i) => [a.id, i]));
    const fabric = new Uint8Array(n * n);
    const nvlinks = new Uint16Array(n * n);
    const hops = new Uint8Array(n * n);
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        const a = offered[i].numaNode;
        const b = offered[j].numaNode;
        hops[i * n + j] = a !== undefined && a === b ? HOPS_SAME_NUMA : HOPS_ACROSS_NUMA;
      }
    }
    const activeNics = inventory.nics.filter((nic) => nic.state.toUpperCase().includes('ACTIVE'));
    const activeNicNames = new Set(activeNics.map((nic) => nic.name));
    const nicNuma = new Set(activeNics.map((nic) => nic.numaNode).filter((v): v is number => v !== undefined));
    const nicAffinity = new Uint8Array(n);
    offered.forEach((a, i) => {
      if (a.numaNode !== undefined && nicNuma.has(a.numaNode)) nicAffinity[i] = 1;
    });
    for (const link of inventory.links) {
      const i = position.get(link.a);
      const j = position.get(link.b);
      if (i !== undefined && j !== undefined && i !== j) {
        const h = HOPS[link.type] ?? HOPS_ACROSS_NUMA;
        const isFabric = FABRIC.has(link.type) ? 1 : 0;
        const count = isFabric ? Math.max(1, link.nvlinks ?? 1) : 0;
        for (const [x, y] of [
          [i, j],
          [j, i],
        ]) {
          hops[x * n + y] = h;
          fabric[x * n + y] = isFabric;
          nvlinks[x * n + y] = count;
        }
      } else if (NEAR_NIC.has(link.type)) {
        const gpu = i ?? j;
        const other = i === undefined ? link.a : link.b;
        if (gpu !== undefined && activeNicNames.has(other)) nicAffinity[gpu] = 2;
      }
    }

    const signature = [
      n,
      Array.from(hops).join(','),
      Array.from(fabric).join(''),
      Array.from(nvlinks).join(','),
      Array.from(nicAffinity).join(''),
    ].join('|');
    const known = models.get(signature);
    if (known) return known;
    let uniform = nicAffinity.every((v) => v === nicAffinity[0]);
    for (let i = 0; uniform && i < n; i++) {
      for (let j = 0; j < n; j++) {
        if (i === j) continue;
        const k = i * n + j;
        if (hops[k] !== hops[1] || fabric[k] !== fabric[1] || nvlinks[k] !== nvlinks[1]) {
          uniform = false;
          break;
        }
      }
    }
    const model = new Interconnect(n, fabric, nvlinks, hops, nicAffinity, uniform);
    if (models.size >= MAX_MODELS) models.clear();
    models.set(signature, model);
    return model;
  }

  /**
   * The `count` accelerators of `freeMask` to give one pod: a set fully connected by NVLink
   * (or xGMI/HCCS) with the most links, else the fewest PCIe hops between its members, then
   * the most members near an ACTIVE NIC, then the lowest indices. 0 when too few are free.
   */
  bestSet(freeMask: number, count: number): number {
    const free = freeMask >>> 0;
    if (count <= 0 || popcount(free) < count) return 0;
    if (this.uniform) return lowestBits(free, count);
    const key = free * 64 + count;
    const known = this.memo.get(key);
    if (known !== undefined) return known;
    const bits = bitsOf(free);
    const best =
      combinations(bits.length, count) <= MAX_ENUMERATED_SETS ? this.bestByEnumeration(bits, count) : this.bestByGrowth(bits, count);
    if (this.memo.size >= MAX_MEMOISED_MASKS) this.memo.clear();
    this.memo.set(key, best);
    return best;
  }

  /**
   * One free accelerator for a shared or sliced pod: the one least connected to the other free
   * ones, so the well-connected groups stay whole for multi-accelerator pods. Ties go to the
   * highest index (whole pods take the lowest), -1 when none is free.
   */
  loneFree(freeMask: number): number {
    const bits = bitsOf(freeMask);
    if (bits.length === 0) return -1;
    if (this.uniform) return bits[bits.length - 1];
    let best = -1;
    let bestCloseness = Number.POSITIVE_INFINITY;
    for (const i of bits) {
      let closeness = 0;
      for (const j of bits) if (j !== i) closeness += this.closeness(i, j);
      if (closeness <= bestCloseness) {
        best = i;
        bestCloseness = closeness;
      }
    }
    return best;
  }

  private closeness(i: number, j: number): number {
    const k = i * this.size + j;
    return this.fabric[k] ? 100 + this.nvlinks[k] : HOPS_ACROSS_NUMA + 1 - this.hops[k];
  }

  private score(members: readonly number[]): SetScore {
    let fullyFabric = 1;
    let nvlinks = 0;
    let hops = 0;
    let nicAffinity = 0;
    for (let x = 0; x < members.length; x++) {
      const i = members[x];
      nicAffinity += this.nicAffinity[i];
      for (let y = x + 1; y < members.length; y++) {
        const k = i * this.size + members[y];
        if (!this.fabric[k]) fullyFabric = 0;
        nvlinks += this.nvlinks[k];
        hops += this.hops[k];
      }
    }
    return { fullyFabric, nvlinks, negHops: -hops, nicAffinity };
  }

  /** Every `count`-subset of the free bits, in ascending lexicographic order. */
  private bestByEnumeration(bits: readonly number[], count: number): number {
    const index = Array.from({ length: count }, (_, i) => i);
    const members = new Array<number>(count);
    let bestScore: SetScore | undefined;
    let bestMask = 0;
    for (;;) {
      let mask = 0;
      for (let x = 0; x < count; x++) {
        members[x] = bits[index[x]];
        mask |= 1 << members[x];
      }
      const s = this.score(members);
      if (!bestScore || better(s, bestScore)) {
        bestScore = s;
        bestMask = mask >>> 0;
      }
      let i = count - 1;
      while (i >= 0 && index[i] === bits.length - count + i) i--;
      if (i < 0) return bestMask;
      index[i]++;
      for (let j = i + 1; j < count; j++) index[j] = index[j - 1] + 1;
    }
  }

  /** Large nodes: grow a set from each free accelerator by adding the best-scoring neighbour. */
  private bestByGrowth(bits: readonly number[], count: number): number {
    let bestScore: SetScore | undefined;
    let bestMask = 0;
    for (const seed of bits) {
      const members = [seed];
      while (members.length < count) {
        let pick = -1;
        let pickScore: SetScore | undefined;
        for (const b of bits) {
          if (members.includes(b)) continue;
          const s = this.score([...members, b]);
          if (!pickScore || better(s, pickScore)) {
            pick = b;
            pickScore = s;
          }
        }
        members.push(pick);
      }
      const s = this.score(members);
      if (!bestScore || better(s, bestScore)) {
        bestScore = s;
        bestMask = members.reduce((m, b) => m | (1 << b), 0) >>> 0;
      }
    }
    return bestMask;
  }
}

function lowestBits(mask: number, count: number): number {
  let picked = 0;
  let m = mask >>> 0;
  for (let i = 0; i < count; i++) {
    const low = m & -m;
    picked |= low;
    m &= m - 1;
  }
  return picked >>> 0;
}

