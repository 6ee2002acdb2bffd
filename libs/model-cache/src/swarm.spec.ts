import { ClaimWatch, claimPrecedes, rotate, rotationOf } from './swarm';

describe('claims between nodes', () => {
  it('keeps a blob for the earlier claim, then the lower node name, the same way on every node', () => {
    expect(claimPrecedes({ peer: 'b', claimedAt: 1 }, { peer: 'a', claimedAt: 2 })).toBe(true);
    expect(claimPrecedes({ peer: 'a', claimedAt: 2 }, { peer: 'b', claimedAt: 1 })).toBe(false);
    expect(claimPrecedes({ peer: 'a', claimedAt: 5 }, { peer: 'b', claimedAt: 5 })).toBe(true);
    expect(claimPrecedes({ peer: 'b', claimedAt: 5 }, { peer: 'a', claimedAt: 5 })).toBe(false);
  });

  it('counts a claim alive while its bytes move, and for one stall timeout from when it was first seen', () => {
    let now = 1_000;
    const watch = new ClaimWatch(500, () => now);
    const f = { peer: 'n2', claimedAt: 900, bytesDone: 0 };
    expect(watch.live('sha256:aa', [f])).toEqual([f]);
    now = 1_400;
    expect(watch.live('sha256:aa', [f])).toEqual([f]);
    now = 1_500;
    expect(watch.live('sha256:aa', [f])).toEqual([]);
    // it moved again: alive for another stall timeout
    const moved = { ...f, bytesDone: 4096 };
    expect(watch.live('sha256:aa', [moved])).toEqual([moved]);
    now = 1_999;
    expect(watch.live('sha256:aa', [moved])).toEqual([moved]);
    now = 2_000;
    expect(watch.live('sha256:aa', [moved])).toEqual([]);
    // another blob of the same peer is watched on its own
    expect(watch.live('sha256:bb', [moved])).toEqual([moved]);
  });

  it('starts nodes at different blobs, the same way every time', () => {
    const starts = ['gpu-0', 'gpu-1', 'gpu-2', 'gpu-3', 'gpu-4', 'gpu-5', 'gpu-6', 'gpu-7'].map((n) => rotationOf(n, 4));
    expect(new Set(starts).size).toBeGreaterThan(1);
    expect(starts.every((s) => s >= 0 && s < 4)).toBe(true);
    expect(rotationOf('gpu-0', 4)).toBe(starts[0]);
    expect(rotationOf(undefined, 4)).toBe(0);
    expect(rotate(['a', 'b', 'c', 'd'], 1)).toEqual(['b', 'c', 'd', 'a']);
    expect(rotate([], 3)).toEqual([]);
  });
});
