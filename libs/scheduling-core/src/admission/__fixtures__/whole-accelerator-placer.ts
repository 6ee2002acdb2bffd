/**
 * A small but real Placer for admission specs: nodes with whole accelerators, best-fit per pod,
 * replicas kept on one node when their pod set requires the "node" topology level. It keeps
 * its own ledger and refuses to commit devices that are not free, so a double booking by the
 * admission controller fails the spec instead of passing silently.
 */
import type { PodPlacement } from '@gpufleet/contracts';
import type { PlacementOutcome, PlacementRequest, Placer, WorkloadKey } from '../../placer';

interface TestNode {
  readonly name: string;
  readonly pool: string;
  /** Free accelerator ids; taken from the end. */
  readonly free: string[];
}

export class WholeAcceleratorPlacer implements Placer {
  private readonly nodes = new Map<string, TestNode>();
  private readonly pools = new Map<string, TestNode[]>();
  /** Per pool, nodes by free accelerator count. */
  private readonly byFree = new Map<string, Set<TestNode>[]>();
  private readonly allocations = new Map<WorkloadKey, PodPlacement[]>();
  tryPlaceCalls = 0;

  constructor(private readonly acceleratorsPerNode = 8) {}

  addNodes(pool: string, count: number, prefix = pool): this {
    const list = this.pools.get(pool) ?? [];
    this.pools.set(pool, list);
    let buckets = this.byFree.get(pool);
    if (!buckets) {
      buckets = Array.from({ length: this.acceleratorsPerNode + 1 }, () => new Set<TestNode>());
      this.byFree.set(pool, buckets);
    }
    for (let i = 0; i < count; i++) {
      const name = `${prefix}-${list.length}`;
      const node: TestNode = { name, pool, free: Array.from({ length: this.acceleratorsPerNode }, (_, k) => `${name}/gpu-${this.acceleratorsPerNode - 1 - k}`) };
      list.push(node);
      this.nodes.set(name, node);
      buckets[node.free.length].add(node);
    }
    return this;
  }

  tryPlace(request: PlacementRequest): PlacementOutcome {
    this.tryPlaceCalls++;
    const nodes = this.pools.get(request.pool);
    const buckets = this.byFree.get(request.pool);
    if (!nodes || !buckets || nodes.length === 0) {
      return { ok: false, reason: 'PoolUnavailable', message: `pool ${request.pool} has no nodes`, largestFreeBlock: '' };
    }
    const taken = new Map<TestNode, number>();
    const freeOf = (n: TestNode): number => n.free.length - (taken.get(n) ?? 0);
    const bestFit = (need: number): TestNode | undefined => {
      for (let f = need; f < buckets.length; f++) for (const n of buckets[f]) if (freeOf(n) >= need) return n;
      return undefined;
    };
    const placements: PodPlacement[] = [];
    const needTotal = request.podSets.reduce((s, p) => s + (p.resources?.accelerator?.whole ?? 0) * p.size * p.count, 0);
    for (const podSet of request.podSets) {
      const a = podSet.resources?.accelerator;
      if (a && a.whole === undefined) throw new Error('WholeAcceleratorPlacer places whole accelerators and CPU-only pods only');
      const perPod = a?.whole ?? 0;
      const together = podSet.topology?.requiredLevel === 'node';
      for (let replica = 0; replica < podSet.count; replica++) {
        const block = together ? perPod * podSet.size : perPod;
        let node = together ? bestFit(block) : undefined;
        for (let pod = 0; pod < podSet.size; pod++) {
          if (!together) node = bestFit(perPod);
          if (!node) {
            const totalFree = nodes.reduce((s, n) => s + n.free.length, 0);
            const largest = nodes.reduce((m, n) => (n.free.length > m.free.length ? n : m), nodes[0]);
            const block = `${largest.free.length} whole accelerators on one node (${largest.name})`;
            if (together && totalFree >= needTotal) {
              return { ok: false, reason: 'TopologyUnsatisfiable', message: `no node has ${perPod * podSet.size} free accelerators for one replica of ${podSet.name}`, largestFreeBlock: block };
            }
            return { ok: false, reason: 'NoFit', message: `no node has ${perPod} free accelerators for ${podSet.name}`, largestFreeBlock: block };
          }
          const used = taken.get(node) ?? 0;
          const ids = node.free.slice(node.free.length - used - perPod, node.free.length - used);
          taken.set(node, used + perPod);
          placements.push({
            podSet: podSet.name, replica, pod, node: node.name, acceleratorIds: ids, sharedTokens: 0, sliceMemoryMib: 0, sliceCoresPercent: 0,
            partition: undefined, vcpu: podSet.resources?.vcpu ?? 0, memoryMib: podSet.resources?.memoryMib ?? 0,
          });
        }
      }
    }
    return { ok: true, placements };
  }

  commit(key: WorkloadKey, placements: PodPlacement[]): void {
    if (this.allocations.has(key)) throw new Error(`${key} is already committed`);
    for (const p of placements) {
      const node = this.nodes.get(p.node);
      if (!node) throw new Error(`${key}: unknown node ${p.node}`);
      for (const id of p.acceleratorIds) {
        const i = node.free.indexOf(id);
        if (i < 0) throw new Error(`${key}: ${id} is not free (double booking)`);
        this.move(node, () => node.free.splice(i, 1));
      }
    }
    this.allocations.set(key, placements);
  }

  release(key: WorkloadKey): void {
    const placements = this.allocations.get(key);
    if (!placements) return;
    for (const p of placements) {
      const node = this.nodes.get(p.node) as TestNode;
      this.move(node, () => node.free.push(...p.acceleratorIds));
    }
    this.allocations.delete(key);
  }

  holds(key: WorkloadKey): boolean {
    return this.allocations.has(key);
  }

  heldKeys(): WorkloadKey[] {
    return [...this.allocations.keys()];
  }

  usedAccelerators(pool: string): number {
    return (this.pools.get(pool) ?? []).reduce((s, n) => s + this.acceleratorsPerNode - n.free.length, 0);
  }

  private move(node: TestNode, change: () => void): void {
    const buckets = this.byFree.get(node.pool) as Set<TestNode>[];
    buckets[node.free.length].delete(node);
    change();
    buckets[node.free.length].add(node);
  }
}
