/** A tree as the eviction planner sees it. */
export interface EvictionCandidate {
  /** manifest digest */
  readonly digest: string;
  /** ms since the epoch; the least recent goes first */
  readonly lastUsedAt: number;
  readonly pinned: boolean;
  /** workloads holding it (acquire without release) */
  readonly inUse: number;
  /** blob keys the tree links */
  readonly blobs: readonly string[];
}

export interface EvictionInput {
  readonly trees: readonly EvictionCandidate[];
  /** bytes of each blob on disk */
  readonly blobSizes: ReadonlyMap<string, number>;
  /** blobs that must stay whatever happens to the trees (needed by a delivery in flight) */
  readonly keep: ReadonlySet<string>;
  /** bytes used now, counting reservations */
  readonly usedBytes: number;
  /** bytes about to be reserved */
  readonly needBytes: number;
  readonly capacityBytes: number;
  /** fractions of capacity */
  readonly high: number;
  readonly low: number;
}

export interface EvictionPlan {
  /** trees to delete, least recently used first */
  readonly evict: readonly string[];
  /** blobs no remaining tree links once those are gone */
  readonly deleteBlobs: readonly string[];
  readonly freedBytes: number;
  /** whether usedBytes − freed + needBytes stays under the high watermark */
  readonly fits: boolean;
}

/**
 * Picks trees no workload uses and nobody pinned, least recently used first, until usage plus
 * the new reservation is down to the low watermark (or nothing else can go). A blob shared by
 * several trees frees its bytes only with the last of them, so it is counted once.
 */
export function planEviction(input: EvictionInput): EvictionPlan {
  const { capacityBytes, high, low } = input;
  const target = low * capacityBytes;
  const limit = high * capacityBytes;
  const refs = new Map<string, number>();
  for (const t of input.trees) for (const b of new Set(t.blobs)) refs.set(b, (refs.get(b) ?? 0) + 1);
  let used = input.usedBytes + input.needBytes;
  if (used <= limit) return { evict: [], deleteBlobs: [], freedBytes: 0, fits: true };

  const candidates = input.trees.filter((t) => !t.pinned && t.inUse === 0).sort((a, b) => a.lastUsedAt - b.lastUsedAt || a.digest.localeCompare(b.digest));
  const evict: string[] = [];
  const deleteBlobs: string[] = [];
  let freed = 0;
  for (const t of candidates) {
    if (used <= target) break;
    evict.push(t.digest);
    for (const b of new Set(t.blobs)) {
      const left = (refs.get(b) ?? 1) - 1;
      refs.set(b, left);
      if (left === 0 && !input.keep.has(b)) {
        const size = input.blobSizes.get(b) ?? 0;
        deleteBlobs.push(b);
        freed += size;
        used -= size;
      }
    }
  }
  return { evict, deleteBlobs, freedBytes: freed, fits: used <= limit };
}
