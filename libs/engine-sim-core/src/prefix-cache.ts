/**
 * The KV cache of the simulated engine: a pool of fixed-size token blocks, shared prompt blocks
 * found again by content (prefix caching) and kept in LRU order when no request uses them.
 *
 * - A prompt is split into blocks of `blockSize` tokens; only full blocks are cached. Each
 *   block's hash chains from its parent's (`blockHashes`), so a block is found again only when
 *   every token before it matches too.
 * - A request pins the cached blocks of its prompt prefix (hits), stores its other full prompt
 *   blocks, and reserves private blocks for its partial last prompt block and its output.
 * - Blocks no running request uses stay cached and evictable, least recently released first; the
 *   blocks of a released request enter the LRU tail-first, so a prefix outlives its suffixes.
 * - Usage is the fraction of blocks pinned or private (vLLM's `kv_cache_usage_perc`): cached
 *   but unused blocks count as free, since they can be evicted at any time.
 *
 * Storing and evicting blocks emits BlockStored / BlockRemoved events (vLLM's KV events, typed
 * with their subject in @gpufleet/contracts: `KvCacheEvent`, `RawSubjects.kvCacheEvents`).
 */
import type { KvCacheEvent } from '@gpufleet/contracts';
import { hash53 } from './hash';

/** The parent of a prompt's first block: hashes chain from this seed. */
export const ROOT_BLOCK_HASH = 0;

/**
 * Chained hashes of the full blocks of `tokenIds`: block i hashes its `blockSize` token ids
 * with block i-1's hash (or ROOT_BLOCK_HASH) as seed (`hash53`). A router holding the same
 * token ids computes the same hashes.
 */
export function blockHashes(tokenIds: ArrayLike<number>, blockSize: number, maxBlocks = Infinity): number[] {
  const count = Math.min(Math.floor(tokenIds.length / blockSize), maxBlocks);
  const hashes = new Array<number>(count);
  let parent = ROOT_BLOCK_HASH;
  for (let i = 0; i < count; i++) {
    parent = hash53(tokenIds, parent, i * blockSize, (i + 1) * blockSize);
    hashes[i] = parent;
  }
  return hashes;
}

interface CachedBlock {
  readonly hash: number;
  /** Running requests holding this block. */
  refs: number;
}

/** What `allocate` took; hand it back to `release`. */
export interface BlockAllocation {
  /** Leading prompt blocks found in the cache. */
  readonly hitBlocks: number;
  /** Cached blocks pinned by this request (hits and newly stored), in prompt order. */
  readonly pinned: readonly number[];
  readonly privateBlocks: number;
}

export interface PrefixCacheOptions {
  readonly totalBlocks: number;
  readonly blockSize: number;
  /** false: nothing is shared; every block is private (`--no-enable-prefix-caching`). */
  readonly enabled?: boolean;
  readonly onEvent?: (event: KvCacheEvent) => void;
}

export class PrefixCache {
  readonly totalBlocks: number;
  readonly blockSize: number;
  readonly enabled: boolean;
  private readonly onEvent?: (event: KvCacheEvent) => void;
  private readonly blocks = new Map<number, CachedBlock>();
  /** Unpinned cached blocks, least recently released first (Map keeps insertion order). */
  private readonly lru = new Map<number, CachedBlock>();
  private privateInUse = 0;

  constructor(options: PrefixCacheOptions) {
    if (!Number.isInteger(options.totalBlocks) || options.totalBlocks < 1) throw new Error('PrefixCache: totalBlocks must be an integer >= 1');
    if (!Number.isInteger(options.blockSize) || options.blockSize < 1) throw new Error('PrefixCache: blockSize must be an integer >= 1');
    this.totalBlocks = options.totalBlocks;
    this.blockSize = options.blockSize;
    this.enabled = options.enabled !== false;
    this.onEvent = options.onEvent;
  }

  /** Blocks pinned by running requests or private to them. */
  get usedBlocks(): number {
    return this.privateInUse + this.blocks.size - this.lru.size;
  }

  /** Cached blocks, pinned or not. */
  get cachedBlocks(): number {
    return this.blocks.size;
  }

  /** 0-1: the fraction of blocks in use (vLLM's kv_cache_usage_perc). */
  get usage(): number {
    return this.usedBlocks / this.totalBlocks;
  }

  has(hash: number): boolean {
    return this.blocks.has(hash);
  }

  /** How many leading hashes are cached, without touching anything. */
  lookup(hashes: readonly number[]): number {
    let hits = 0;
    while (hits < hashes.length && this.blocks.has(hashes[hits])) hits++;
    return hits;
  }

  /**
   * Takes the blocks of one request: pins the cached prefix of `hashes` (up to `maxHitBlocks`),
   * stores the rest of `hashes` (their tokens from `tokenIds`), reserves `privateBlocks`, and
   * evicts unpinned blocks when it must. Returns undefined, changing nothing, when the free and
   * evictable blocks do not suffice.
   */
  allocate(
    hashes: readonly number[],
    tokenIds: ArrayLike<number>,
    privateBlocks: number,
    maxHitBlocks: number = hashes.length,
  ): BlockAllocation | undefined {
    if (!this.enabled) {
      const needed = hashes.length + privateBlocks;
      if (needed > this.totalBlocks - this.privateInUse) return undefined;
      this.privateInUse += needed;
      return { hitBlocks: 0, pinned: [], privateBlocks: needed };
    }

    let hitBlocks = 0;
    while (hitBlocks < hashes.length && hitBlocks < maxHitBlocks && this.blocks.has(hashes[hitBlocks])) hitBlocks++;

    // Blocks this request reuses (hits, and later blocks another request stored meanwhile) that
    // are unpinned now stop being evictable; blocks not cached need new space.
    let reusedUnpinned = 0;
    let newBlocks = 0;
    for (let i = 0; i < hashes.length; i++) {
      const block = this.blocks.get(hashes[i]);
      if (!block) newBlocks++;
      else if (block.refs === 0) reusedUnpinned++;
    }
    const free = this.totalBlocks - this.blocks.size - this.privateInUse;
    const evictable = this.lru.size - reusedUnpinned;
    if (newBlocks + privateBlocks > free + evictable) return undefined;

    for (const hash of hashes) {
      const block = this.blocks.get(hash);
      if (block) {
        if (block.refs++ === 0) this.lru.delete(hash);
      }
    }
    this.evict(newBlocks + privateBlocks - free);

    let firstNew = -1;
    const stored: number[] = [];
    for (let i = 0; i < hashes.length; i++) {
      if (this.blocks.has(hashes[i])) {
        if (firstNew >= 0) this.emitStored(stored, firstNew, tokenIds, hashes);
        firstNew = -1;
        stored.length = 0;
        continue;
      }
      const block: CachedBlock = { hash: hashes[i], refs: 1 };
      this.blocks.set(block.hash, block);
      if (firstNew < 0) firstNew = i;
      stored.push(block.hash);
    }
    if (firstNew >= 0) this.emitStored(stored, firstNew, tokenIds, hashes);

    this.privateInUse += privateBlocks;
    return { hitBlocks, pinned: [...hashes], privateBlocks };
  }

  /** Returns a request's blocks: private ones are freed, cached ones become evictable when unpinned. */
  release(allocation: BlockAllocation): void {
    this.privateInUse -= allocation.privateBlocks;
    // Tail first: a request's last blocks are evicted before its first ones.
    for (let i = allocation.pinned.length - 1; i >= 0; i--) {
      const block = this.blocks.get(allocation.pinned[i]);
      if (!block) continue;
      if (--block.refs === 0) this.lru.set(block.hash, block);
    }
  }

  /**
   * Drops every unpinned cached block (vLLM's reset_prefix_cache). Returns false, changing
   * nothing, while running requests hold cached blocks.
   */
  reset(): boolean {
    if (this.blocks.size !== this.lru.size) return false;
    this.blocks.clear();
    this.lru.clear();
    this.onEvent?.({ type: 'AllBlocksCleared' });
    return true;
  }

  private evict(count: number): void {
    if (count <= 0) return;
    const removed: number[] = [];
    for (const hash of this.lru.keys()) {
      if (removed.length >= count) break;
      removed.push(hash);
    }
    for (const hash of removed) {
      this.lru.delete(hash);
      this.blocks.delete(hash);
    }
    if (removed.length > 0) this.onEvent?.({ type: 'BlockRemoved', block_hashes: removed, medium: 'GPU' });
  }

  private emitStored(stored: readonly number[], firstIndex: number, tokenIds: ArrayLike<number>, hashes: readonly number[]): void {
    if (!this.onEvent || stored.length === 0) return;
    const start = firstIndex * this.blockSize;
    const end = (firstIndex + stored.length) * this.blockSize;
    const tokens = new Array<number>(end - start);
    for (let i = start; i < end; i++) tokens[i - start] = tokenIds[i];
    this.onEvent({
      type: 'BlockStored',
      block_hashes: [...stored],
      parent_block_hash: firstIndex === 0 ? null : hashes[firstIndex - 1],
      token_ids: tokens,
      block_size: this.blockSize,
      lora_id: null,
      medium: 'GPU',
    });
  }
}
