/**
 * Out-of-the-box queues: every pool gets a default ClusterQueue sized to its capacity, and
 * every namespace a LocalQueue named "default" the first time a workload names it. Pure rules;
 * the scheduler applies the plans they return.
 *
 *  - The default ClusterQueue of pool P is `default-<P>`, marked `managedBy: gpufleet`, with
 *    `nominalQuota` = P's capacity in credits (all nodes of P, Ready or not).
 *  - An administrator's own ClusterQueue of P (any queue without the marker) replaces it: the
 *    default one is deleted once no workload holds it and no LocalQueue points at it.
 *  - A managed LocalQueue (a namespace's "default") routes by pool: a workload that names its
 *    pool (WorkloadSpec.pool, from its InstanceType) enters the queue serving that pool. Its
 *    stored `clusterQueue` is where workloads without a pool go: the queue serving the default
 *    pool (the pool with the most whole-usable accelerators); while it holds no workloads it
 *    follows that queue when it changes.
 */
import { createHash } from 'crypto';
import { ClusterQueue, LocalQueue } from '@gpufleet/contracts';
import { CREDITS_PER_ACCELERATOR, CREDITS_PER_VCPU } from '@gpufleet/capacity-core';
import type { PoolShape } from '../validation/pool-shape';
import { normalizeClusterQueue } from './queue-objects';

/** The `managedBy` of queues the scheduler creates and may change or delete. */
export const MANAGED_BY_GPUFLEET = 'gpufleet';
/** The only LocalQueue name created on first use. */
export const DEFAULT_LOCAL_QUEUE_NAME = 'default';

const DNS_LABEL_MAX = 63;
const PREFIX = 'default-';

export function isManagedQueue(q: { managedBy?: string | undefined }): boolean {
  return q.managedBy === MANAGED_BY_GPUFLEET;
}

/** `default-<pool>`; a pool name too long for that keeps its start and gets a hash of the whole. */
export function defaultClusterQueueName(pool: string): string {
  const plain = `${PREFIX}${pool}`;
  if (plain.length <= DNS_LABEL_MAX) return plain;
  const hash = createHash('sha256').update(pool).digest('hex').slice(0, 8);
  return `${PREFIX}${pool.slice(0, DNS_LABEL_MAX - PREFIX.length - 1 - hash.length).replace(/-+$/, '')}-${hash}`;
}

/** Credits per hour the whole pool offers: its accelerators (MIG-enabled included), or its vCPU when CPU-only. */
export function poolCapacityCredits(pool: PoolShape): number {
  if (pool.acceleratorProduct === '') {
    return pool.nodeShapes.reduce((n, s) => n + s.vcpu * s.nodes, 0) * CREDITS_PER_VCPU;
  }
  return (pool.totalAccelerators + pool.totalMigAccelerators) * CREDITS_PER_ACCELERATOR;
}

/** The default ClusterQueue of a pool, as stored (defaults applied). */
export function defaultClusterQueueFor(pool: PoolShape): ClusterQueue {
  return {
    ...normalizeClusterQueue(ClusterQueue.fromPartial({ name: defaultClusterQueueName(pool.name), pool: pool.name, nominalQuota: poolCapacityCredits(pool) })),
    managedBy: MANAGED_BY_GPUFLEET,
  };
}

/**
 * The pool a namespace's default LocalQueue admits into: the most accelerators usable whole
 * (what `deploy` and `create instance` ask for by default), then the most MIG-enabled ones,
 * then the name. A CPU-only fleet gets its first CPU pool.
 */
export function defaultPool(pools: Iterable<PoolShape>): PoolShape | undefined {
  return [...pools].sort((a, b) => b.totalAccelerators - a.totalAccelerators || b.totalMigAccelerators - a.totalMigAccelerators || a.name.localeCompare(b.name))[0];
}

/** The queue serving a pool: an administrator's own (first by name), else the default one. */
export function servingClusterQueue(pool: string, clusterQueues: Iterable<ClusterQueue>): ClusterQueue | undefined {
  const ofPool = [...clusterQueues].filter((q) => q.pool === pool).sort((a, b) => a.name.localeCompare(b.name));
  return ofPool.find((q) => !isManagedQueue(q)) ?? ofPool.find((q) => q.name === defaultClusterQueueName(pool) && isManagedQueue(q));
}

/** Where a LocalQueue leads one workload, or why it leads nowhere (`localQueue: expected …, got …`). */
export type LocalQueueRoute = { ok: true; clusterQueue: ClusterQueue } | { ok: false; expected: string; got: string };

/** The ClusterQueues a route is chosen from. */
export interface ClusterQueueLookup {
  get(name: string): ClusterQueue | undefined;
  all(): Iterable<ClusterQueue>;
}

/**
 * The ClusterQueue a workload enters through `lq`. `pool` is the pool the workload is sized for
 * (WorkloadSpec.pool; undefined when it names none). A managed LocalQueue routes by that pool;
 * any other LocalQueue leads to its own ClusterQueue, which must then be of that pool.
 */
export function routeLocalQueue(lq: LocalQueue, pool: string | undefined, clusterQueues: ClusterQueueLookup): LocalQueueRoute {
  const name = JSON.stringify(lq.name);
  if (pool && isManagedQueue(lq)) {
    const serving = servingClusterQueue(pool, clusterQueues.all());
    if (serving) return { ok: true, clusterQueue: serving };
    return {
      ok: false,
      expected: `a LocalQueue that admits into pool "${pool}" (the pool of the workload's InstanceType; its default ClusterQueue is created once the pool has nodes: see \`gpufleet get pools\`)`,
      got: `${name}, and no ClusterQueue serves pool "${pool}"`,
    };
  }
  const cq = clusterQueues.get(lq.clusterQueue);
  if (!cq) return { ok: false, expected: 'a LocalQueue whose ClusterQueue exists', got: `${name} → ClusterQueue ${JSON.stringify(lq.clusterQueue)}, which does not exist` };
  if (pool && cq.pool !== pool) {
    return {
      ok: false,
      expected: `a LocalQueue that admits into pool "${pool}" (the pool of the workload's InstanceType)`,
      got: `${name} → ClusterQueue ${JSON.stringify(cq.name)} of pool "${cq.pool}"`,
    };
  }
  return { ok: true, clusterQueue: cq };
}

export type DefaultLocalQueue =
  | { ok: true; localQueue: LocalQueue; /** Create it first when it is not stored yet. */ clusterQueue?: ClusterQueue }
  | { ok: false; expected: string };

/**
 * The LocalQueue `default` of a namespace that has none: it points at the queue serving the
 * default pool, or at that pool's default ClusterQueue, to be created along with it when the
 * scheduler's leader has not made it yet.
 */
export function defaultLocalQueueFor(namespace: string, pools: Iterable<PoolShape>, clusterQueues: Iterable<ClusterQueue>): DefaultLocalQueue {
  const pool = defaultPool(pools);
  if (!pool) return { ok: false, expected: `a LocalQueue of namespace "${namespace}" ("default" is created on first use once a node has reported; see \`gpufleet get pools\`)` };
  const serving = servingClusterQueue(pool.name, clusterQueues);
  const clusterQueue = serving ?? defaultClusterQueueFor(pool);
  const localQueue: LocalQueue = { namespace, name: DEFAULT_LOCAL_QUEUE_NAME, clusterQueue: clusterQueue.name, managedBy: MANAGED_BY_GPUFLEET };
  return serving ? { ok: true, localQueue } : { ok: true, localQueue, clusterQueue };
}

/** What to tell a workload that names a LocalQueue its namespace does not have. */
export function missingLocalQueueExpectation(namespace: string): string {
  return (
    `a LocalQueue of namespace "${namespace}" (create it with \`gpufleet submit -f\`, as in examples/workloads/queues.yaml, ` +
    `or leave the queue unset to use "${DEFAULT_LOCAL_QUEUE_NAME}", which is created on first use)`
  );
}

export interface DefaultQueueState {
  /** Pools that have nodes. */
  readonly pools: readonly PoolShape[];
  readonly clusterQueues: readonly ClusterQueue[];
  readonly localQueues: readonly LocalQueue[];
  /** ClusterQueues and LocalQueues ("namespace/name") that hold pending or admitted workloads. */
  readonly busyClusterQueues: ReadonlySet<string>;
  readonly busyLocalQueues: ReadonlySet<string>;
}

export interface DefaultQueuePlan {
  /** Default ClusterQueues to create or resize. */
  readonly putClusterQueues: ClusterQueue[];
  /** Managed LocalQueues to point at the queue now serving the default pool. */
  readonly putLocalQueues: LocalQueue[];
  /** Default ClusterQueues no longer needed and safe to remove. */
  readonly deleteClusterQueues: string[];
}

function sameDefault(a: ClusterQueue, b: ClusterQueue): boolean {
  return a.pool === b.pool && a.nominalQuota === b.nominalQuota && isManagedQueue(a);
}

/**
 * One reconcile pass. A default ClusterQueue is kept (and sized) while its pool has nodes and
 * no administrator's queue; otherwise it is deleted, but only once it is idle and no LocalQueue
 * points at it, so nothing admitted through it is cut off. An administrator's queue that took
 * a default one's name is never touched. LocalQueues are only pointed at queues that exist.
 */
export function planDefaultQueues(state: DefaultQueueState): DefaultQueuePlan {
  const byName = new Map(state.clusterQueues.map((q) => [q.name, q]));
  const putClusterQueues: ClusterQueue[] = [];
  const wanted = new Set<string>();
  for (const pool of state.pools) {
    const hasOwn = state.clusterQueues.some((q) => q.pool === pool.name && !isManagedQueue(q));
    if (hasOwn) continue;
    const desired = defaultClusterQueueFor(pool);
    const existing = byName.get(desired.name);
    if (existing && !isManagedQueue(existing)) continue;
    wanted.add(desired.name);
    if (!existing || !sameDefault(existing, desired)) putClusterQueues.push(desired);
  }

  const pool = defaultPool(state.pools);
  const target = pool && servingClusterQueue(pool.name, state.clusterQueues);
  const putLocalQueues: LocalQueue[] = [];
  const pointedAt = new Set<string>();
  for (const lq of state.localQueues) {
    const key = `${lq.namespace}/${lq.name}`;
    if (target && isManagedQueue(lq) && lq.clusterQueue !== target.name && !state.busyLocalQueues.has(key)) {
      putLocalQueues.push({ ...lq, clusterQueue: target.name });
      pointedAt.add(target.name);
    } else {
      pointedAt.add(lq.clusterQueue);
    }
  }

  const deleteClusterQueues = state.clusterQueues
    .filter((q) => isManagedQueue(q) && !wanted.has(q.name) && !state.busyClusterQueues.has(q.name) && !pointedAt.has(q.name))
    .map((q) => q.name);
  return { putClusterQueues, putLocalQueues, deleteClusterQueues };
}
