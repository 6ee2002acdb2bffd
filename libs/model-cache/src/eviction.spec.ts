import { planEviction, type EvictionInput } from './eviction';

const base = (over: Partial<EvictionInput>): EvictionInput => ({
  trees: [],
  blobSizes: new Map([
    ['sha256:a', 30],
    ['sha256:b', 30],
    ['sha256:c', 30],
  ]),
  keep: new Set(),
  usedBytes: 90,
  needBytes: 0,
  capacityBytes: 100,
  high: 0.8,
  low: 0.7,
  ...over,
});

describe('planEviction', () => {
  it('evicts nothing under the high watermark', () => {
    expect(planEviction(base({ usedBytes: 50, needBytes: 30 }))).toEqual({ evict: [], deleteBlobs: [], freedBytes: 0, fits: true });
  });

  it('evicts least recently used first, down to the low watermark, skipping pinned and in-use trees', () => {
    const plan = planEviction(
      base({
        trees: [
          { digest: 'old-pinned', lastUsedAt: 1, pinned: true, inUse: 0, blobs: ['sha256:a'] },
          { digest: 'old-in-use', lastUsedAt: 2, pinned: false, inUse: 1, blobs: ['sha256:b'] },
          { digest: 'newer', lastUsedAt: 3, pinned: false, inUse: 0, blobs: ['sha256:c'] },
        ],
      }),
    );
    expect(plan).toEqual({ evict: ['newer'], deleteBlobs: ['sha256:c'], freedBytes: 30, fits: true });
  });

  it('counts a shared blob once: it is freed with the last tree that links it', () => {
    const plan = planEviction(
      base({
        trees: [
          { digest: 't1', lastUsedAt: 1, pinned: false, inUse: 0, blobs: ['sha256:a'] },
          { digest: 't2', lastUsedAt: 2, pinned: false, inUse: 0, blobs: ['sha256:a', 'sha256:b'] },
          { digest: 't3', lastUsedAt: 3, pinned: false, inUse: 0, blobs: ['sha256:c'] },
        ],
        needBytes: 10,
      }),
    );
    // t1 frees nothing (t2 still links a); t2 frees a and b: 100 - 60 = 40 <= 70
    expect(plan.evict).toEqual(['t1', 't2']);
    expect(plan.freedBytes).toBe(60);
  });

  it('keeps blobs a delivery in flight needs, and says when nothing can make room', () => {
    const plan = planEviction(
      base({ trees: [{ digest: 't1', lastUsedAt: 1, pinned: false, inUse: 0, blobs: ['sha256:a'] }], keep: new Set(['sha256:a']), needBytes: 20 }),
    );
    expect(plan).toMatchObject({ deleteBlobs: [], freedBytes: 0, fits: false });
  });
});
