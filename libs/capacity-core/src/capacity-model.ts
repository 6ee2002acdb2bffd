/**
 * The scheduler's live capacity model: node records in, pools and InstanceTypes with live
 * capacity out, plus the InstanceType change events each mutation causes.
 *
 * Incremental by construction: a node's shape and view contribution are computed from its own
 * record only; its pool keeps running sums, so an update touches one node and re-derives the
 * handful of InstanceTypes of one pool. Nothing scans the fleet.
 */
import {
  InstanceType,
  Node,
  NodeInventory,
  NodePhase,
  NodeStatus,
  Pool,
  WatchEventType,
} from '@gpufleet/contracts';
import { migGeometryForProduct } from '@gpufleet/device-inventory';
import { NO_ALLOCATIONS, NodeAllocations } from './allocations';
import {
  buildInstanceType,
  instanceTypeFamily,
  InstanceTypeUnit,
  poolViews,
  sameInstanceTypeContent,
} from './instance-types';
import {
  NodeContribution,
  nodeContributionOf,
  NodeShape,
  nodeShapeKey,
  nodeShapeOf,
  sameContribution,
} from './node-capacity';
import { PoolCapacity } from './pool-capacity';
import { PinnedPoolName, poolIdentityKey, poolIdentityOf, PoolNames } from './pools';

/** One InstanceType change, as WatchInstanceTypes and the InstanceTypeChanged event carry it. */
export interface InstanceTypeEvent {
  type: WatchEventType.WATCH_EVENT_TYPE_ADDED | WatchEventType.WATCH_EVENT_TYPE_MODIFIED | WatchEventType.WATCH_EVENT_TYPE_DELETED;
  instanceType: InstanceType;
}

export interface NodeFilter {
  /** Only nodes of this pool. */
  pool?: string;
  /** Only nodes whose labels hold every key=value pair. */
  labelSelector?: Readonly<Record<string, string>>;
}

export interface CapacityModelOptions {
  /** Pool names from the state store, so a restarted scheduler keeps them. */
  pinnedPoolNames?: Iterable<PinnedPoolName>;
  /** Time source for NodeStatus.lastTransition. */
  clock?: () => Date;
}

interface NodeRecord {
  inventory: NodeInventory;
  status: NodeStatus;
  pool: PoolCapacity;
  shape: NodeShape;
  shapeKey: string;
  contribution: NodeContribution;
  /** Whether `contribution` is in the pool's sums (the node is Ready). */
  counted: boolean;
}

const isReady = (status: NodeStatus): boolean => status.phase === NodePhase.NODE_PHASE_READY;

function initialStatus(): NodeStatus {
  return { phase: NodePhase.NODE_PHASE_UNSPECIFIED, lastHeartbeat: undefined, lastTransition: undefined, reason: '', message: '' };
}

export class CapacityModel {
  private readonly nodes = new Map<string, NodeRecord>();
  /** Phase reported before the node's first inventory; applied when it arrives. */
  private readonly earlyStatus = new Map<string, NodeStatus>();
  private readonly allocations = new Map<string, NodeAllocations>();
  private readonly pools = new Map<string, PoolCapacity>();
  private readonly poolsByName = new Map<string, PoolCapacity>();
  private readonly poolNames: PoolNames;
  private readonly families = new Map<PoolCapacity, InstanceTypeUnit[]>();
  private readonly typesByPool = new Map<PoolCapacity, InstanceType[]>();
  private readonly instanceTypes = new Map<string, InstanceType>();
  /** Last revision per InstanceType name; kept after deletion so revisions never go back. */
  private readonly revisions = new Map<string, number>();
  private readonly dirtyPools = new Set<PoolCapacity>();
  private readonly clock: () => Date;
  private batchDepth = 0;

  constructor(options: CapacityModelOptions = {}) {
    this.poolNames = new PoolNames(options.pinnedPoolNames);
    this.clock = options.clock ?? (() => new Date());
  }

  // ---- mutations -------------------------------------------------------------------------

  /** Adds a node or replaces its inventory. A new node is not offered until it is Ready. */
  upsertNode(inventory: NodeInventory): InstanceTypeEvent[] {
    const name = inventory.nodeName;
    if (name === '') throw new Error('INVALID_ARGUMENT: node inventory has an empty nodeName');
    return this.mutate(() => {
      const identity = poolIdentityOf(inventory);
      const key = poolIdentityKey(identity);
      const record = this.nodes.get(name);
      if (record && record.pool.identityKey === key) {
        this.refresh(name, record, inventory);
        return;
      }
      const status = record?.status ?? this.earlyStatus.get(name) ?? initialStatus();
      if (record) this.detach(name, record);
      this.earlyStatus.delete(name);
      let pool = this.pools.get(key);
      if (!pool) {
        const firstAccelerator = inventory.accelerators.find((a) => a.product === identity.acceleratorProduct);
        const geometry = identity.acceleratorProduct
          ? migGeometryForProduct(identity.acceleratorProduct, firstAccelerator?.memoryMib)
          : undefined;
        pool = new PoolCapacity(key, identity, geometry);
        this.pools.set(key, pool);
      }
      this.attach(name, inventory, status, pool);
    });
  }

  /** Sets a node's phase (and optionally the rest of its status). Only Ready nodes are offered. */
  setPhase(nodeName: string, phase: NodePhase, status?: Partial<Omit<NodeStatus, 'phase'>>): InstanceTypeEvent[] {
    return this.mutate(() => {
      const record = this.nodes.get(nodeName);
      const previous = record?.status ?? this.earlyStatus.get(nodeName) ?? initialStatus();
      const next: NodeStatus = {
        ...previous,
        ...status,
        phase,
        lastTransition: status?.lastTransition ?? (phase !== previous.phase ? this.clock() : previous.lastTransition),
      };
      if (!record) {
        this.earlyStatus.set(nodeName, next);
        return;
      }
      record.status = next;
      this.recount(record);
    });
  }

  removeNode(name: string): InstanceTypeEvent[] {
    return this.mutate(() => {
      this.earlyStatus.delete(name);
      this.allocations.delete(name);
      const record = this.nodes.get(name);
      if (record) this.detach(name, record);
    });
  }

  /** Replaces what is allocated on a node; may arrive before the node's inventory. */
  setAllocations(nodeName: string, allocations: NodeAllocations): InstanceTypeEvent[] {
    return this.mutate(() => {
      this.allocations.set(nodeName, allocations);
      const record = this.nodes.get(nodeName);
      if (record) this.refresh(nodeName, record, record.inventory);
    });
  }

  /**
   * Runs several mutations as one change: InstanceTypes are re-derived once at the end and
   * the events are coalesced per InstanceType (mutations inside return no events). Loading a
   * fleet at start-up goes through here. Pools created in one batch are named largest first,
   * so the same fleet always gets the same names whatever order its nodes arrive in.
   */
  batch(apply: () => void): InstanceTypeEvent[] {
    this.batchDepth++;
    let completed = false;
    try {
      apply();
      completed = true;
    } finally {
      this.batchDepth--;
    }
    // After a throw the dirty pools stay marked; the next mutation reports their changes.
    return completed && this.batchDepth === 0 ? this.commit() : [];
  }

  // ---- queries ---------------------------------------------------------------------------

  listNodes(filter: NodeFilter = {}): Node[] {
    let names: Iterable<string>;
    if (filter.pool !== undefined && filter.pool !== '') {
      const pool = this.poolsByName.get(filter.pool);
      if (!pool) return [];
      names = pool.nodes;
    } else {
      names = this.nodes.keys();
    }
    const selector = Object.entries(filter.labelSelector ?? {});
    const nodes: Node[] = [];
    for (const name of names) {
      const record = this.nodes.get(name);
      if (!record) continue;
      const labels = record.inventory.labels;
      if (selector.every(([k, v]) => labels[k] === v)) nodes.push(this.nodeView(name, record));
    }
    return nodes.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  getNode(name: string): Node | undefined {
    const record = this.nodes.get(name);
    return record && this.nodeView(name, record);
  }

  listPools(): Pool[] {
    return [...this.poolsByName.values()]
      .map((p) => this.poolView(p))
      .sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  getPool(name: string): Pool | undefined {
    const pool = this.poolsByName.get(name);
    return pool && this.poolView(pool);
  }

  /** InstanceTypes, by pool name then unit size. Returned objects are snapshots: a change makes a new one. */
  listInstanceTypes(pool?: string): InstanceType[] {
    if (pool !== undefined && pool !== '') {
      const p = this.poolsByName.get(pool);
      return p ? [...(this.typesByPool.get(p) ?? [])] : [];
    }
    const names = [...this.poolsByName.keys()].sort();
    return names.flatMap((n) => this.typesByPool.get(this.poolsByName.get(n) as PoolCapacity) ?? []);
  }

  getInstanceType(name: string): InstanceType | undefined {
    return this.instanceTypes.get(name);
  }

  // ---- internals -------------------------------------------------------------------------

  private mutate(change: () => void): InstanceTypeEvent[] {
    return this.batch(change);
  }

  private attach(name: string, inventory: NodeInventory, status: NodeStatus, pool: PoolCapacity): void {
    const shape = nodeShapeOf(inventory, pool.identity);
    const shapeKey = nodeShapeKey(shape);
    const contribution = nodeContributionOf(inventory, pool.identity, pool.geometry, this.allocationsOf(name));
    const record: NodeRecord = { inventory, status, pool, shape, shapeKey, contribution, counted: false };
    this.nodes.set(name, record);
    pool.nodes.add(name);
    pool.addShape(shapeKey, shape);
    this.dirtyPools.add(pool);
    this.recount(record);
  }

  private detach(name: string, record: NodeRecord): void {
    const pool = record.pool;
    if (record.counted) pool.count(record.contribution, -1);
    record.counted = false;
    pool.removeShape(record.shapeKey);
    pool.nodes.delete(name);
    this.nodes.delete(name);
    this.dirtyPools.add(pool);
  }

  /** Recomputes a node that stays in its pool; the pool is touched only if something it sums changed. */
  private refresh(name: string, record: NodeRecord, inventory: NodeInventory): void {
    record.inventory = inventory;
    const pool = record.pool;
    const shape = nodeShapeOf(inventory, pool.identity);
    const shapeKey = nodeShapeKey(shape);
    if (shapeKey !== record.shapeKey) {
      pool.removeShape(record.shapeKey);
      pool.addShape(shapeKey, shape);
      record.shape = shape;
      record.shapeKey = shapeKey;
      this.dirtyPools.add(pool);
    }
    const contribution = nodeContributionOf(inventory, pool.identity, pool.geometry, this.allocationsOf(name));
    if (sameContribution(contribution, record.contribution)) return;
    if (record.counted) {
      pool.count(record.contribution, -1);
      pool.count(contribution, 1);
      this.dirtyPools.add(pool);
    }
    record.contribution = contribution;
  }

  /** Brings the pool's sums in line with the node's phase. */
  private recount(record: NodeRecord): void {
    const ready = isReady(record.status);
    if (ready === record.counted) return;
    record.pool.count(record.contribution, ready ? 1 : -1);
    record.counted = ready;
    this.dirtyPools.add(record.pool);
  }

  private allocationsOf(name: string): NodeAllocations {
    return this.allocations.get(name) ?? NO_ALLOCATIONS;
  }

  /** Names new pools, drops empty ones, re-derives the InstanceTypes of changed pools, and diffs. */
  private commit(): InstanceTypeEvent[] {
    if (this.dirtyPools.size === 0) return [];
    const dirty = [...this.dirtyPools];
    this.dirtyPools.clear();

    const before = new Map<string, InstanceType>();
    for (const pool of dirty) for (const t of this.typesByPool.get(pool) ?? []) before.set(t.name, t);

    for (const pool of dirty) {
      if (pool.nodes.size > 0 || !this.pools.has(pool.identityKey)) continue;
      this.pools.delete(pool.identityKey);
      this.poolsByName.delete(pool.name);
      this.poolNames.release(pool.identityKey);
      this.families.delete(pool);
      this.typesByPool.delete(pool);
    }
    // Pools born together are named biggest first (ties by identity), so a colliding base
    // name goes plain to the pool most people will type, whatever order the nodes came in.
    const unnamed = dirty
      .filter((p) => p.name === '' && this.pools.get(p.identityKey) === p)
      .sort((a, b) => b.nodes.size - a.nodes.size || (a.identityKey < b.identityKey ? -1 : 1));
    for (const pool of unnamed) {
      pool.name = this.poolNames.assign(pool.identityKey, pool.identity);
      this.poolsByName.set(pool.name, pool);
    }

    const after = new Map<string, InstanceType>();
    for (const pool of dirty) {
      if (this.pools.get(pool.identityKey) !== pool) continue;
      let family = this.families.get(pool);
      if (!family || pool.familyStale) {
        family = instanceTypeFamily(pool.name, pool.isCpuPool, pool.distinctShapes());
        this.families.set(pool, family);
        pool.familyStale = false;
      }
      const views = poolViews(pool);
      const types = family.map((member) => {
        const fresh = buildInstanceType(pool, views, member, 0);
        const previous = before.get(member.name);
        if (previous && sameInstanceTypeContent(previous, fresh)) return previous;
        fresh.revision = (this.revisions.get(member.name) ?? 0) + 1;
        return fresh;
      });
      this.typesByPool.set(pool, types);
      for (const t of types) after.set(t.name, t);
    }

    const events: InstanceTypeEvent[] = [];
    for (const [name, old] of before) {
      if (after.has(name)) continue;
      this.instanceTypes.delete(name);
      events.push({ type: WatchEventType.WATCH_EVENT_TYPE_DELETED, instanceType: old });
    }
    for (const [name, t] of after) {
      const old = before.get(name);
      if (old === t) continue;
      this.instanceTypes.set(name, t);
      this.revisions.set(name, t.revision);
      events.push({
        type: old ? WatchEventType.WATCH_EVENT_TYPE_MODIFIED : WatchEventType.WATCH_EVENT_TYPE_ADDED,
        instanceType: t,
      });
    }
    return events;
  }

  private nodeView(name: string, record: NodeRecord): Node {
    // The runtime's report is joined by the scheduler, which reads the runtimes bucket.
    return { name, inventory: record.inventory, status: { ...record.status }, pool: record.pool.name, runtime: undefined };
  }

  private poolView(pool: PoolCapacity): Pool {
    return {
      name: pool.name,
      identity: { ...pool.identity },
      nodes: [...pool.nodes].sort(),
      readyNodes: pool.readyNodes,
      accelerators: pool.accelerators,
      migAccelerators: pool.migAccelerators,
    };
  }
}
