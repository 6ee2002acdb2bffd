import { forEachConcurrently } from './concurrency';

describe('forEachConcurrently', () => {
  it('keeps at most `limit` calls in flight, starts them in item order and waits for all', async () => {
    let inFlight = 0;
    let most = 0;
    const started: number[] = [];
    await forEachConcurrently(Array.from({ length: 100 }, (_, i) => i), 8, async (item, index) => {
      expect(index).toBe(item);
      started.push(item);
      most = Math.max(most, ++inFlight);
      await new Promise((r) => setTimeout(r, item % 3));
      inFlight--;
    });
    expect(most).toBe(8);
    expect(inFlight).toBe(0);
    expect(started).toEqual(Array.from({ length: 100 }, (_, i) => i));
  });

  it('runs every item although one fails, then rejects with the first failure', async () => {
    const done: number[] = [];
    const run = forEachConcurrently([1, 2, 3, 4], 2, async (item) => {
      if (item === 2) throw new Error('two failed');
      done.push(item);
    });
    await expect(run).rejects.toThrow('two failed');
    expect(done.sort()).toEqual([1, 3, 4]);
  });

  it('does nothing for no items', async () => {
    await expect(forEachConcurrently([], 4, async () => undefined)).resolves.toBeUndefined();
  });
});
