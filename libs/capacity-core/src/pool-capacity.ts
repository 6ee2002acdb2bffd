/**
 * The running totals of one pool: which nodes it has, the distinct node shapes (for its
 * InstanceType family) and the sum of its Ready nodes' contributions (for the views). Adding or
 * removing a node costs O(figures), independent of the pool's size.
 */
import { PoolIdentity } from '@gpufleet/contracts';
import type { MigGeometry } from '@gpufleet/device-inventory';
import { CountedValues } from './counted-values';
import { NodeContribution, NodeShape } from './node-capacity';

/** A capacity figure summed over Ready nodes, with the largest single-node amount. */
export class SummedFigure {
  total = 0;
  readonly perNode = new CountedValues();

  add(amount: number, nodeMax: number): void {
    this.total += amount;
    this.perNode.add(nodeMax);
  }

  remove(amount: number, nodeMax: number): void {
    this.total -= amount;
    this.perNode.remove(nodeMax);
  }
}

export class PoolCapacity {
  /** Assigned when the change that created the pool is committed. */
  name = '';
  readonly nodes = new Set<string>();
  readyNodes = 0;
  accelerators = 0;
  migAccelerators = 0;

  /** Whole-mode accelerators per Ready node, as a histogram: units of N are counted per node. */
  readonly wholeCapacity = new CountedValues();
  readonly wholeFree = new CountedValues();
  readonly tokens = new SummedFigure();
  tokensCapacity = 0;
  readonly slicedMemory = new SummedFigure();
  slicedMemoryCapacity = 0;
  readonly cores = new SummedFigure();
  coresCapacity = 0;
  readonly partitionCapacity: number[];
  readonly partitions: SummedFigure[];
  readonly cpu = new SummedFigure();
  cpuCapacity = 0;
  readonly memory = new SummedFigure();
  memoryCapacity = 0;

  /** Distinct shapes of all the pool's nodes, Ready or not: the family follows the hardware, not liveness. */
  private readonly shapes = new Map<string, { shape: NodeShape; count: number }>();
  /** True when the set of distinct shapes changed since the family was last derived. */
  familyStale = true;

  constructor(
    readonly identityKey: string,
    readonly identity: PoolIdentity,
    /** MIG geometry of the pool's product; undefined when it has none. */
    readonly geometry: MigGeometry | undefined,
  ) {
    const profiles = geometry?.profiles.length ?? 0;
    this.partitionCapacity = new Array<number>(profiles).fill(0);
    this.partitions = Array.from({ length: profiles }, () => new SummedFigure());
  }

  get isCpuPool(): boolean {
    return this.identity.acceleratorProduct === '';
  }

  addShape(key: string, shape: NodeShape): void {
    const entry = this.shapes.get(key);
    if (entry) {
      entry.count++;
    } else {
      this.shapes.set(key, { shape, count: 1 });
      this.familyStale = true;
    }
  }

  removeShape(key: string): void {
    const entry = this.shapes.get(key);
    if (!entry) throw new Error(`pool ${this.name}: removing unknown node shape ${key}`);
    if (--entry.count === 0) {
      this.shapes.delete(key);
      this.familyStale = true;
    }
  }

  distinctShapes(): NodeShape[] {
    return [...this.shapes.values()].map((e) => e.shape);
  }

  /** Adds (sign 1) or removes (sign -1) a Ready node's contribution. */
  count(c: NodeContribution, sign: 1 | -1): void {
    this.readyNodes += sign;
    this.accelerators += sign * c.accelerators;
    this.migAccelerators += sign * c.migAccelerators;
    this.tokensCapacity += sign * c.tokensCapacity;
    this.slicedMemoryCapacity += sign * c.slicedMemoryCapacity;
    this.coresCapacity += sign * c.coresCapacity;
    this.cpuCapacity += sign * c.cpuCapacity;
    this.memoryCapacity += sign * c.memoryCapacity;
    if (sign === 1) {
      this.wholeCapacity.add(c.wholeCapacity);
      this.wholeFree.add(c.wholeFree);
      this.tokens.add(c.tokensRemaining, c.tokensMaxFree);
      this.slicedMemory.add(c.slicedMemoryRemaining, c.slicedMemoryMaxFree);
      this.cores.add(c.coresRemaining, c.coresMaxFree);
      this.cpu.add(c.cpuRemaining, c.cpuRemaining);
      this.memory.add(c.memoryRemaining, c.memoryRemaining);
    } else {
      this.wholeCapacity.remove(c.wholeCapacity);
      this.wholeFree.remove(c.wholeFree);
      this.tokens.remove(c.tokensRemaining, c.tokensMaxFree);
      this.slicedMemory.remove(c.slicedMemoryRemaining, c.slicedMemoryMaxFree);
      this.cores.remove(c.coresRemaining, c.coresMaxFree);
      this.cpu.remove(c.cpuRemaining, c.cpuRemaining);
      this.memory.remove(c.memoryRemaining, c.memoryRemaining);
    }
    for (let i = 0; i < this.partitions.length; i++) {
      this.partitionCapacity[i] += sign * (c.partitionCapacity[i] ?? 0);
      const remaining = c.partitionRemaining[i] ?? 0;
      if (sign === 1) this.partitions[i].add(remaining, remaining);
      else this.partitions[i].remove(remaining, remaining);
    }
  }
}
