/**
 * What is already handed out on a node. The devices ledger (a later issue) produces these;
 * the capacity views subtract them. Everything is optional: an absent field means nothing of
 * that kind is allocated.
 */

/** Tokens one accelerator offers in the shared (time-sliced) mode. */
export const SHARED_TOKENS_PER_ACCELERATOR = 10;
/** Compute one accelerator offers in the sliced mode, in percent. */
export const CORES_PERCENT_PER_ACCELERATOR = 100;

/** A logical slice of one accelerator: a memory budget and a compute share. */
export interface AcceleratorSlice {
  /** Accelerator memory, MiB. */
  memoryMib: number;
  /** Percent of the accelerator's compute (0–100). */
  coresPercent: number;
}

/**
 * How one (non-MIG) accelerator is used. The modes exclude each other: an accelerator given
 * whole offers no tokens or slices; one with tokens or slices handed out is not free as a whole.
 */
export type AcceleratorAllocation =
  | { readonly mode: 'whole' }
  | { readonly mode: 'shared'; /** tokens in use, of 10 */ readonly tokens: number }
  | { readonly mode: 'sliced'; readonly slices: readonly AcceleratorSlice[] };

/** A MIG partition the scheduler placed (or reserved) on a MIG-enabled GPU. */
export interface MigPartitionPlacement {
  /** Accelerator id within the node, e.g. "nvidia-3". */
  acceleratorId: string;
  /** Profile name, e.g. "3g.40gb". */
  profile: string;
  /** First memory slice, as in `nvidia-smi mig -lgipp` placements ({start}:size). */
  start: number;
}

export interface NodeAllocations {
  /** Keyed by accelerator id ("nvidia-0"). Ids the inventory does not list are ignored. */
  accelerators?: Readonly<Record<string, AcceleratorAllocation>>;
  migPartitions?: readonly MigPartitionPlacement[];
  /** vCPU in use. */
  vcpu?: number;
  /** Node memory in use, MiB. */
  memoryMib?: number;
}

/** The default: nothing allocated. */
export const NO_ALLOCATIONS: NodeAllocations = Object.freeze({});
