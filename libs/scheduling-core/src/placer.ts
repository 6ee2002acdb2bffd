import type { PodPlacement, PodSet } from '@gpufleet/contracts';

/** How slices and shared tokens are packed onto accelerators. */
export type Packing = 'binpack' | 'spread';

/** Workloads are keyed "<namespace>/<name>" everywhere (ledger entries, events, queues): `workloadKey` of @gpufleet/contracts. */
export type WorkloadKey = string;

export interface PlacementRequest {
  key: WorkloadKey;
  /** Pool (from the workload's ClusterQueue) whose Ready nodes may be used. */
  pool: string;
  podSets: PodSet[];
  packing: Packing;
  /**
   * Nodes a single-pod replica tries first, in order (weight locality: the nodes whose cache holds
   * the workload's model weights). A preference, never a constraint: when none of them fits, the
   * replica is placed as without it.
   */
  preferredNodes?: readonly string[];
}

export type PlacementFailureReason =
  /** Not enough free devices of the requested kind on any node (or set of nodes). */
  | 'NoFit'
  /** Devices exist, but not within the required topology level. */
  | 'TopologyUnsatisfiable'
  /** The pool has no Ready nodes, or does not exist. */
  | 'PoolUnavailable';

export interface PlacementFailure {
  reason: PlacementFailureReason;
  /** A sentence a user can act on. */
  message: string;
  /** The largest block the pool could give now, in the request's terms. */
  largestFreeBlock: string;
}

export type PlacementOutcome = { ok: true; placements: PodPlacement[] } | ({ ok: false } & PlacementFailure);

/**
 * The device-fit and placement step of admission, over the in-memory mirror of the devices
 * ledger. `tryPlace` never changes state; `commit` records an admitted workload (and must be
 * called only with placements `tryPlace` returned since the last change); `release` frees it.
 */
export interface Placer {
  tryPlace(request: PlacementRequest): PlacementOutcome;
  commit(key: WorkloadKey, placements: PodPlacement[]): void;
  release(key: WorkloadKey): void;
}
