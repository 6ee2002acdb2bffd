import type { KvCacheEvent } from '@gpufleet/contracts';
import { hash53 } from './hash';
import { blockHashes, PrefixCache, ROOT_BLOCK_HASH } from './prefix-cache';

const range = (from: number, count: number): number[] => Array.from({ length: count }, (_, i) => from + i);

describe('blockHashes', () => {
  it('hashes full blocks only, each chained from its parent', () => {
    const tokens = range(100, 40);
    const hashes = blockHashes(tokens, 16);
    expect(hashes).toHaveLength(2);
    expect(hashes[0]).toBe(hash53(tokens.slice(0, 16), ROOT_BLOCK_HASH));
    expect(hashes[1]).toBe(hash53(tokens.slice(16, 32), hashes[0]));
    for (const h of hashes) expect(Number.isSafeInteger(h)).toBe(true);
  });

  it('gives equal prefixes equal hashes, and a changed early token changes every later hash', () => {
    const a = range(1, 64);
    const b = [...a];
    b[70 - 64 + 60] = 0; // beyond the blocks: no effect
    expect(blockHashes(b, 16)).toEqual(blockHashes(a, 16));
    const c = [...a];
    c[3] = 999;
    const hc = blockHashes(c, 16);
    const ha = blockHashes(a, 16);
    for (let i = 0; i < 4; i++) expect(hc[i]).not.toBe(ha[i]);
    // The same block content after a different prefix is a different block.
    expect(blockHashes([...range(500, 16), ...range(1, 16)], 16)[1]).not.toBe(ha[0]);
  });
});

describe('PrefixCache', () => {
  function cache(totalBlocks: number, enabled = true): { cache: PrefixCache; events: KvCacheEvent[] } {
    const events: KvCacheEvent[] = [];
    return { cache: new PrefixCache({ totalBlocks, blockSize: 4, enabled, onEvent: (e) => events.push(e) }), events };
  }

  it('stores a prompt’s blocks with one BlockStored event carrying hashes, parent and tokens', () => {
    const { cache: c, events } = cache(10);
    const tokens = range(10, 9);
    const hashes = blockHashes(tokens, 4);
    const allocation = c.allocate(hashes, tokens, 1);
    expect(allocation).toEqual({ hitBlocks: 0, pinned: hashes, privateBlocks: 1 });
    expect(events).toEqual([
      { type: 'BlockStored', block_hashes: hashes, parent_block_hash: null, token_ids: tokens.slice(0, 8), block_size: 4, lora_id: null, medium: 'GPU' },
    ]);
    expect(c.usedBlocks).toBe(3);
    expect(c.usage).toBeCloseTo(0.3);
  });

  it('finds a shared prefix again and stores only the new suffix, parented on the last shared block', () => {
    const { cache: c, events } = cache(10);
    const first = range(0, 8);
    c.release(c.allocate(blockHashes(first, 4), first, 0)!);
    events.length = 0;
    const second = [...first, ...range(50, 4)];
    const hashes = blockHashes(second, 4);
    const allocation = c.allocate(hashes, second, 0)!;
    expect(allocation.hitBlocks).toBe(2);
    expect(events).toEqual([
      { type: 'BlockStored', block_hashes: [hashes[2]], parent_block_hash: hashes[1], token_ids: range(50, 4), block_size: 4, lora_id: null, medium: 'GPU' },
    ]);
    expect(c.lookup(hashes)).toBe(3);
  });

  it('limits hits to maxHitBlocks', () => {
    const { cache: c } = cache(10);
    const tokens = range(0, 8);
    const hashes = blockHashes(tokens, 4);
    c.release(c.allocate(hashes, tokens, 0)!);
    expect(c.allocate(hashes, tokens, 0, 1)!.hitBlocks).toBe(1);
  });

  it('counts unpinned cached blocks as free, and evicts least recently released first, a request’s tail first', () => {
    const { cache: c, events } = cache(4);
    const a = range(0, 8);
    const b = range(100, 8);
    const ha = blockHashes(a, 4);
    const hb = blockHashes(b, 4);
    c.release(c.allocate(ha, a, 0)!);
    c.release(c.allocate(hb, b, 0)!);
    expect(c.usedBlocks).toBe(0);
    expect(c.cachedBlocks).toBe(4);
    events.length = 0;
    // Needs 3 free blocks: evicts a's tail, a's head, then b's tail.
    const allocation = c.allocate([], [], 3)!;
    expect(events).toEqual([{ type: 'BlockRemoved', block_hashes: [ha[1], ha[0], hb[1]], medium: 'GPU' }]);
    expect(c.has(hb[0])).toBe(true);
    expect(c.usage).toBe(0.75);
    c.release(allocation);
    expect(c.usage).toBe(0);
  });

  it('refuses, changing nothing, what pinned and private blocks leave no room for', () => {
    const { cache: c, events } = cache(4);
    const a = range(0, 8);
    c.allocate(blockHashes(a, 4), a, 1);
    events.length = 0;
    expect(c.allocate([], [], 2)).toBeUndefined();
    expect(events).toEqual([]);
    expect(c.usedBlocks).toBe(3);
    // A request reusing the pinned prefix needs no new space for it.
    expect(c.allocate(blockHashes(a, 4), a, 1)).toBeDefined();
  });

  it('keeps a block pinned while any request holds it', () => {
    const { cache: c } = cache(4);
    const a = range(0, 4);
    const h = blockHashes(a, 4);
    const one = c.allocate(h, a, 0)!;
    const two = c.allocate(h, a, 0)!;
    c.release(one);
    expect(c.usedBlocks).toBe(1);
    c.release(two);
    expect(c.usedBlocks).toBe(0);
  });

  it('shares nothing with prefix caching off', () => {
    const { cache: c, events } = cache(4, false);
    const a = range(0, 8);
    const allocation = c.allocate(blockHashes(a, 4), a, 1)!;
    expect(allocation).toEqual({ hitBlocks: 0, pinned: [], privateBlocks: 3 });
    expect(events).toEqual([]);
    expect(c.allocate([], [], 2)).toBeUndefined();
    c.release(allocation);
    expect(c.usedBlocks).toBe(0);
  });

  it('resets only when nothing is pinned, announcing AllBlocksCleared', () => {
    const { cache: c, events } = cache(4);
    const a = range(0, 4);
    const allocation = c.allocate(blockHashes(a, 4), a, 0)!;
    expect(c.reset()).toBe(false);
    c.release(allocation);
    expect(c.reset()).toBe(true);
    expect(c.cachedBlocks).toBe(0);
    expect(events[events.length - 1]).toEqual({ type: 'AllBlocksCleared' });
  });
});
