/**
 * What admission needs to know about the pool a workload targets: which accelerator it has,
 * the node shapes (to tell whether one pod can ever fit on one node), the totals (to tell
 * whether the whole workload can ever fit), and the MIG geometry (which profiles exist).
 *
 * Shapes count every node of the pool, Ready or not: a node that is briefly NotReady must not
 * turn valid workloads into invalid ones. Live free capacity is the Placer's business.
 */
import type { Node, Pool } from '@gpufleet/contracts';
import { migGeometryForProduct, MigGeometry } from '@gpufleet/device-inventory';

/** The nodes of one shape. */
export interface PoolNodeShape {
  /** Accelerators of the pool's product offered whole, shared or sliced (MIG disabled). */
  readonly accelerators: number;
  /** Accelerators of the pool's product with MIG enabled: they offer partitions only. */
  readonly migAccelerators: number;
  readonly vcpu: number;
  /** MiB */
  readonly memoryMib: number;
  /** Nodes with this shape. */
  readonly nodes: number;
}

export interface PoolShape {
  readonly name: string;
  /** Empty for a CPU-only pool. */
  readonly acceleratorProduct: string;
  /** MiB of the pool's largest accelerator: slice budgets are checked and priced against it. */
  readonly acceleratorMemoryMib: number;
  /** MIG profiles the product offers; undefined when it has none. */
  readonly migGeometry: MigGeometry | undefined;
  readonly nodeShapes: readonly PoolNodeShape[];
  /** Non-MIG accelerators on all nodes. */
  readonly totalAccelerators: number;
  /** MIG-enabled accelerators on all nodes. */
  readonly totalMigAccelerators: number;
  /** Per figure, the most any node has (the figures may come from different nodes). */
  readonly largestNode: Omit<PoolNodeShape, 'nodes'>;
}

export interface PoolShapeInput {
  name: string;
  acceleratorProduct?: string;
  acceleratorMemoryMib?: number;
  migGeometry?: MigGeometry;
  nodeShapes: readonly PoolNodeShape[];
}

/** A PoolShape with its totals and maxima derived from the node shapes. */
export function definePoolShape(input: PoolShapeInput): PoolShape {
  let totalAccelerators = 0;
  let totalMigAccelerators = 0;
  const largestNode = { accelerators: 0, migAccelerators: 0, vcpu: 0, memoryMib: 0 };
  for (const s of input.nodeShapes) {
    totalAccelerators += s.accelerators * s.nodes;
    totalMigAccelerators += s.migAccelerators * s.nodes;
    largestNode.accelerators = Math.max(largestNode.accelerators, s.accelerators);
    largestNode.migAccelerators = Math.max(largestNode.migAccelerators, s.migAccelerators);
    largestNode.vcpu = Math.max(largestNode.vcpu, s.vcpu);
    largestNode.memoryMib = Math.max(largestNode.memoryMib, s.memoryMib);
  }
  return Object.freeze({
    name: input.name,
    acceleratorProduct: input.acceleratorProduct ?? '',
    acceleratorMemoryMib: input.acceleratorMemoryMib ?? 0,
    migGeometry: input.migGeometry,
    nodeShapes: Object.freeze([...input.nodeShapes]),
    totalAccelerators,
    totalMigAccelerators,
    largestNode: Object.freeze(largestNode),
  });
}

/** What `poolShapeFromCapacity` reads: the subset of `CapacityModel` it uses. */
export interface PoolCapacitySource {
  getPool(name: string): Pool | undefined;
  listNodes(filter: { pool: string }): Node[];
}

/**
 * The shape of a pool from the capacity model (pass the `CapacityModel`). O(nodes of the pool):
 * rebuild it when nodes join, leave or change inventory, not on every allocation.
 */
export function poolShapeFromCapacity(capacity: PoolCapacitySource, poolName: string): PoolShape | undefined {
  const pool = capacity.getPool(poolName);
  if (!pool) return undefined;
  const identity = pool.identity;
  const product = identity?.acceleratorProduct ?? '';
  const shapes = new Map<string, { accelerators: number; migAccelerators: number; vcpu: number; memoryMib: number; nodes: number }>();
  let acceleratorMemoryMib = 0;
  for (const node of capacity.listNodes({ pool: poolName })) {
    const inventory = node.inventory;
    if (!inventory) continue;
    let accelerators = 0;
    let migAccelerators = 0;
    if (product !== '') {
      for (const a of inventory.accelerators) {
        if (a.product !== product || a.vendor !== identity?.acceleratorVendor) continue;
        if (a.migEnabled) migAccelerators++;
        else accelerators++;
        acceleratorMemoryMib = Math.max(acceleratorMemoryMib, a.memoryMib ?? 0);
      }
    }
    const vcpu = inventory.cpu?.logicalCpus ?? 0;
    const memoryMib = inventory.memory?.totalMib ?? 0;
    const key = `${accelerators}/${migAccelerators}/${vcpu}/${memoryMib}`;
    const shape = shapes.get(key);
    if (shape) shape.nodes++;
    else shapes.set(key, { accelerators, migAccelerators, vcpu, memoryMib, nodes: 1 });
  }
  return definePoolShape({
    name: poolName,
    acceleratorProduct: product,
    acceleratorMemoryMib,
    migGeometry: product === '' ? undefined : migGeometryForProduct(product, acceleratorMemoryMib || undefined),
    nodeShapes: [...shapes.values()],
  });
}
