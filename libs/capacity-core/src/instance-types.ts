/**
 * InstanceTypes: the resource configurations a pool offers, with their credit price and live
 * capacity in the four allocation modes (whole, shared, sliced, partitioned) plus CPU and memory.
 */
import { CapacityView, InstanceType, InstanceTypeCapacity, PartitionCapacity, UnitSpec } from '@gpufleet/contracts';
import { NodeShape } from './node-capacity';
import { PoolCapacity } from './pool-capacity';

/** Credits per accelerator per hour: the unit quotas are sized in. */
export const CREDITS_PER_ACCELERATOR = 1_600_000;
/**
 * Credits per vCPU per hour on CPU pools: 1/16 of an accelerator, since GPU nodes give about
 * 16 vCPU per accelerator (e.g. 8 × H100 with 128–224 vCPU) and a CPU-only unit with the same
 * vCPU should cost what its share of such a node would.
 */
export const CREDITS_PER_VCPU = CREDITS_PER_ACCELERATOR / 16;
/** Smallest CPU InstanceType, in vCPU; smaller nodes offer just their own size. */
export const MIN_CPU_UNIT_VCPU = 4;

/** One member of a pool's family, before live capacity is attached. */
export interface InstanceTypeUnit {
  readonly name: string;
  readonly unit: UnitSpec;
  readonly creditPrice: number;
}

/** Powers of two up to `max`, plus `max` itself when it is not one. */
function powersOfTwoUpTo(max: number, from: number): number[] {
  if (max <= 0) return [];
  const sizes: number[] = [];
  for (let n = from; n <= max; n *= 2) sizes.push(n);
  if (sizes[sizes.length - 1] !== max) sizes.push(max);
  return sizes;
}

/** Accelerator counts of a GPU pool's units: 1, 2, 4, 8 … up to its largest node (e.g. 1, 2, 4, 6 for 6 GPUs). */
export function acceleratorUnitCounts(largestNodeAccelerators: number): number[] {
  return powersOfTwoUpTo(largestNodeAccelerators, 1);
}

/** vCPU sizes of a CPU pool's units: 4, 8, 16 … up to its largest node. */
export function cpuUnitSizes(largestNodeVcpu: number): number[] {
  return largestNodeVcpu < MIN_CPU_UNIT_VCPU ? powersOfTwoUpTo(largestNodeVcpu, largestNodeVcpu) : powersOfTwoUpTo(largestNodeVcpu, MIN_CPU_UNIT_VCPU);
}

/** floor(amount × part / whole) over the shapes, smallest wins: every node must be able to give it. */
function smallestShare(shapes: readonly NodeShape[], amount: (s: NodeShape) => number, whole: (s: NodeShape) => number, part: number): number {
  let smallest = Number.POSITIVE_INFINITY;
  for (const s of shapes) {
    const w = whole(s);
    if (w <= 0) continue;
    smallest = Math.min(smallest, Math.floor((amount(s) * part) / w));
  }
  return Number.isFinite(smallest) ? smallest : 0;
}

/**
 * The family of a pool, from the distinct shapes of its nodes. GPU pools: `<pool>.<N>x` with N
 * accelerators and the node's vCPU, memory and local storage in proportion, taken from the
 * smallest node so every node can give it. CPU pools: `<pool>.<C>c` with memory and storage in
 * proportion to vCPU.
 */
export function instanceTypeFamily(poolName: string, isCpuPool: boolean, shapes: readonly NodeShape[]): InstanceTypeUnit[] {
  if (isCpuPool) {
    const largest = Math.max(0, ...shapes.map((s) => s.logicalCpus));
    return cpuUnitSizes(largest).map((vcpu) => ({
      name: `${poolName}.${vcpu}c`,
      unit: {
        accelerators: 0,
        vcpu,
        memoryMib: smallestShare(shapes, (s) => s.memoryMib, (s) => s.logicalCpus, vcpu),
        localStorageGib: smallestShare(shapes, (s) => s.localStorageGib, (s) => s.logicalCpus, vcpu),
        acceleratorMemoryMib: 0,
      },
      creditPrice: vcpu * CREDITS_PER_VCPU,
    }));
  }
  const largest = Math.max(0, ...shapes.map((s) => s.accelerators));
  const withAccelerators = shapes.filter((s) => s.accelerators > 0);
  const acceleratorMemoryMib = Math.min(...withAccelerators.map((s) => s.acceleratorMemoryMib));
  return acceleratorUnitCounts(largest).map((n) => ({
    name: `${poolName}.${n}x`,
    unit: {
      accelerators: n,
      vcpu: smallestShare(withAccelerators, (s) => s.logicalCpus, (s) => s.accelerators, n),
      memoryMib: smallestShare(withAccelerators, (s) => s.memoryMib, (s) => s.accelerators, n),
      localStorageGib: smallestShare(withAccelerators, (s) => s.localStorageGib, (s) => s.accelerators, n),
      acceleratorMemoryMib: Number.isFinite(acceleratorMemoryMib) ? acceleratorMemoryMib : 0,
    },
    creditPrice: n * CREDITS_PER_ACCELERATOR,
  }));
}

const EMPTY_VIEW: CapacityView = Object.freeze({ onceMaxRequest: 0, remaining: 0, capacity: 0 });

/** Whole accelerators in units of `n`: a node with f free accelerators gives floor(f / n) units. */
function wholeView(pool: PoolCapacity, n: number): CapacityView {
  if (n <= 0) return EMPTY_VIEW;
  const units = (count: number): number => Math.floor(count / n) * n;
  let capacity = 0;
  let remaining = 0;
  for (const [count, nodes] of pool.wholeCapacity.entries()) capacity += nodes * units(count);
  for (const [free, nodes] of pool.wholeFree.entries()) remaining += nodes * units(free);
  return { onceMaxRequest: units(pool.wholeFree.max()), remaining, capacity };
}

/** The views every member of a pool's family shares (all but whole, which depends on N). */
export interface PoolViews {
  readonly shared: CapacityView;
  readonly sliced: { memoryMib: CapacityView; coresPercent: CapacityView };
  readonly partitioned: readonly PartitionCapacity[];
  readonly cpu: CapacityView;
  readonly memoryMib: CapacityView;
}

export function poolViews(pool: PoolCapacity): PoolViews {
  const partitioned: PartitionCapacity[] =
    pool.geometry?.profiles.map((profile, i) => ({
      profile: profile.name,
      view: {
        onceMaxRequest: pool.partitions[i].perNode.max(),
        remaining: pool.partitions[i].total,
        capacity: pool.partitionCapacity[i],
      },
    })) ?? [];
  return {
    shared: { onceMaxRequest: pool.tokens.perNode.max(), remaining: pool.tokens.total, capacity: pool.tokensCapacity },
    sliced: {
      memoryMib: {
        onceMaxRequest: pool.slicedMemory.perNode.max(),
        remaining: pool.slicedMemory.total,
        capacity: pool.slicedMemoryCapacity,
      },
      coresPercent: { onceMaxRequest: pool.cores.perNode.max(), remaining: pool.cores.total, capacity: pool.coresCapacity },
    },
    partitioned,
    cpu: { onceMaxRequest: pool.cpu.perNode.max(), remaining: pool.cpu.total, capacity: pool.cpuCapacity },
    memoryMib: { onceMaxRequest: pool.memory.perNode.max(), remaining: pool.memory.total, capacity: pool.memoryCapacity },
  };
}

export function instanceTypeCapacity(pool: PoolCapacity, views: PoolViews, unitAccelerators: number): InstanceTypeCapacity {
  return {
    whole: wholeView(pool, unitAccelerators),
    shared: views.shared,
    sliced: views.sliced,
    partitioned: [...views.partitioned],
    cpu: views.cpu,
    memoryMib: views.memoryMib,
  };
}

export function buildInstanceType(
  pool: PoolCapacity,
  views: PoolViews,
  member: InstanceTypeUnit,
  revision: number,
): InstanceType {
  return {
    name: member.name,
    pool: pool.name,
    acceleratorProduct: pool.identity.acceleratorProduct,
    unit: member.unit,
    creditPrice: member.creditPrice,
    capacity: instanceTypeCapacity(pool, views, member.unit.accelerators),
    readyNodes: pool.readyNodes,
    revision,
  };
}

function sameView(a: CapacityView | undefined, b: CapacityView | undefined): boolean {
  if (a === b) return true;
  if (!a || !b) return false;
  return a.onceMaxRequest === b.onceMaxRequest && a.remaining === b.remaining && a.capacity === b.capacity;
}

function sameUnit(a: UnitSpec | undefined, b: UnitSpec | undefined): boolean {
  if (a === b) return true;
  if (!a || !b) return false;
  return (
    a.accelerators === b.accelerators &&
    a.vcpu === b.vcpu &&
    a.memoryMib === b.memoryMib &&
    a.localStorageGib === b.localStorageGib &&
    a.acceleratorMemoryMib === b.acceleratorMemoryMib
  );
}

function sameCapacity(a: InstanceTypeCapacity | undefined, b: InstanceTypeCapacity | undefined): boolean {
  if (a === b) return true;
  if (!a || !b) return false;
  if (a.partitioned.length !== b.partitioned.length) return false;
  for (let i = 0; i < a.partitioned.length; i++) {
    if (a.partitioned[i].profile !== b.partitioned[i].profile || !sameView(a.partitioned[i].view, b.partitioned[i].view)) {
      return false;
    }
  }
  return (
    sameView(a.whole, b.whole) &&
    sameView(a.shared, b.shared) &&
    sameView(a.sliced?.memoryMib, b.sliced?.memoryMib) &&
    sameView(a.sliced?.coresPercent, b.sliced?.coresPercent) &&
    sameView(a.cpu, b.cpu) &&
    sameView(a.memoryMib, b.memoryMib)
  );
}

/** Equal in everything but revision: a change worth an event. */
export function sameInstanceTypeContent(a: InstanceType, b: InstanceType): boolean {
  return (
    a.name === b.name &&
    a.pool === b.pool &&
    a.acceleratorProduct === b.acceleratorProduct &&
    a.creditPrice === b.creditPrice &&
    a.readyNodes === b.readyNodes &&
    sameUnit(a.unit, b.unit) &&
    sameCapacity(a.capacity, b.capacity)
  );
}
