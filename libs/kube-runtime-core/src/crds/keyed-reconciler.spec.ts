import { KeyedReconciler } from './keyed-reconciler';

const OPTIONS = { intervalMs: 200, maxDirty: 3, backoffInitialMs: 1000, backoffMaxMs: 8000 };

describe('KeyedReconciler', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  const flush = async (ms: number) => {
    await jest.advanceTimersByTimeAsync(ms);
  };

  it('coalesces marks of one key into one write per interval', async () => {
    const writes: string[] = [];
    const r = new KeyedReconciler(async (k) => void writes.push(k), () => [], OPTIONS);
    for (let i = 0; i < 50; i++) r.mark('a');
    r.mark('b');
    await flush(1);
    expect(writes.sort()).toEqual(['a', 'b']);
    r.mark('a');
    r.mark('a');
    await flush(100);
    expect(writes).toHaveLength(2); // not before the interval
    await flush(150);
    expect(writes.filter((k) => k === 'a')).toHaveLength(2);
    expect(r.idle).toBe(true);
    r.stop();
  });

  it('past maxDirty keys resyncs every key once instead of growing', async () => {
    const writes: string[] = [];
    const r = new KeyedReconciler(async (k) => void writes.push(k), () => ['x', 'y'], OPTIONS);
    for (const k of ['a', 'b', 'c', 'd', 'e']) r.mark(k);
    expect(r.pending).toBe(Infinity);
    await flush(1);
    expect(writes.sort()).toEqual(['x', 'y']);
    r.stop();
  });

  it('retries a failing key with backoff, then succeeds', async () => {
    let failuresLeft = 2;
    const at: number[] = [];
    const errors: number[] = [];
    const r = new KeyedReconciler(
      async () => {
        at.push(Date.now());
        if (failuresLeft-- > 0) throw new Error('503');
      },
      () => [],
      OPTIONS,
      (_k, _e, attempts) => errors.push(attempts),
    );
    const start = Date.now();
    r.mark('a');
    await flush(1);
    expect(at).toHaveLength(1);
    await flush(700);
    expect(at).toHaveLength(1); // backing off (~1 s)
    await flush(600);
    expect(at).toHaveLength(2);
    await flush(2500);
    expect(at).toHaveLength(3);
    expect(errors).toEqual([1, 2]);
    expect(at[2] - start).toBeGreaterThanOrEqual(2400);
    expect(r.idle).toBe(true);
    r.stop();
  });
});
