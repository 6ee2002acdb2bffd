import { createLogger, createMetricsRegistry, type Registry } from '@gpufleet/observability';
import { ReconcileLoop, type ReconcileLoopOptions } from './reconcile-loop';

const logger = createLogger({ service: 'reconcile-spec', level: 'silent' });
const tick = () => new Promise((r) => setImmediate(r));

/** Polls until `check` holds: timing-based behaviour, asserted without betting on a loaded machine's speed. */
async function until(check: () => boolean | Promise<boolean>, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function counter(registry: Registry, name: string, labels: Record<string, string>): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  const value = metric?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
  return Number(value?.value ?? 0);
}

function loopOf(pass: ReconcileLoopOptions['pass'], extra: Partial<ReconcileLoopOptions> = {}) {
  const registry = createMetricsRegistry({ service: 'spec', defaultMetrics: false });
  const loop = new ReconcileLoop({ name: 'spec', pass, logger, registry, retryMs: 20, ...extra });
  return { loop, registry };
}

describe('ReconcileLoop', () => {
  it('coalesces a burst of triggers into one pass', async () => {
    let passes = 0;
    const { loop } = loopOf(async () => void passes++);
    loop.start();
    for (let i = 0; i < 50; i++) loop.kick();
    await loop.idle();
    expect(passes).toBe(1);
    await loop.stop();
  });

  it('runs one pass at a time, and once more for triggers that arrived during a pass', async () => {
    let concurrent = 0;
    let maxConcurrent = 0;
    let passes = 0;
    let release!: () => void;
    const { loop } = loopOf(async () => {
      passes++;
      concurrent++;
      maxConcurrent = Math.max(maxConcurrent, concurrent);
      if (passes === 1) await new Promise<void>((r) => (release = r));
      concurrent--;
    });
    loop.start();
    await tick();
    expect(passes).toBe(1);
    loop.kick();
    loop.kick();
    loop.kick();
    release();
    await loop.idle();
    expect(passes).toBe(2);
    expect(maxConcurrent).toBe(1);
    await loop.stop();
  });

  it('goes on with the other items when one fails, counts the error and retries', async () => {
    const seen: string[] = [];
    let failOnce = true;
    const { loop, registry } = loopOf((run) =>
      run.each(['a', 'b', 'c'], (x) => x, (x) => {
        seen.push(x);
        if (x === 'b' && failOnce) {
          failOnce = false;
          throw new Error('b is broken');
        }
      }),
    );
    loop.start();
    await loop.idle();
    expect(seen).toEqual(['a', 'b', 'c']);
    expect(await counter(registry, 'gpufleet_reconcile_errors_total', { loop: 'spec' })).toBe(1);
    expect(await counter(registry, 'gpufleet_reconcile_passes_total', { loop: 'spec', result: 'error' })).toBe(1);
    // The retry after retryMs runs every item again.
    await until(() => seen.length === 6);
    await loop.idle();
    expect(seen).toEqual(['a', 'b', 'c', 'a', 'b', 'c']);
    expect(await counter(registry, 'gpufleet_reconcile_passes_total', { loop: 'spec', result: 'ok' })).toBe(1);
    await loop.stop();
  });

  it('counts a pass that throws outside any item and retries it', async () => {
    let passes = 0;
    const { loop, registry } = loopOf(async () => {
      passes++;
      if (passes === 1) throw new Error('store unavailable');
    });
    loop.start();
    await until(() => passes === 2);
    await loop.idle();
    expect(passes).toBe(2);
    expect(await counter(registry, 'gpufleet_reconcile_errors_total', { loop: 'spec' })).toBe(1);
    await loop.stop();
  });

  it('takes no triggers once stopped, and stop waits for the pass in progress', async () => {
    let passes = 0;
    let finished = false;
    const { loop } = loopOf(async (run) => {
      passes++;
      await new Promise((r) => setTimeout(r, 30));
      finished = run.stopped;
    });
    loop.start();
    await tick();
    await loop.stop();
    expect(finished).toBe(true);
    loop.kick();
    await tick();
    await loop.idle();
    expect(passes).toBe(1);
  });

  it('stops working through items once stopped', async () => {
    const seen: number[] = [];
    const { loop } = loopOf((run) =>
      run.each([1, 2, 3], String, async (n) => {
        seen.push(n);
        if (n === 1) await loop.stop();
      }),
    );
    loop.start();
    await loop.idle();
    expect(seen).toEqual([1]);
  });

  it('runs again on its resync period without a trigger', async () => {
    let passes = 0;
    const { loop } = loopOf(async () => void passes++, { resyncMs: 15 });
    loop.start();
    await until(() => passes >= 3);
    await loop.stop();
    expect(passes).toBeGreaterThanOrEqual(3);
  });
});
