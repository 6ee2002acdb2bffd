import type { NodeFeatureObject } from '@gpufleet/device-inventory';
import type { Logger } from '@gpufleet/observability';
import { NodeFeaturePublisher } from './node-feature-publisher';

const logger = { debug: jest.fn(), info: jest.fn(), warn: jest.fn(), error: jest.fn() } as unknown as Logger;
const tick = () => new Promise((r) => setImmediate(r));

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (e: Error) => void } {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

describe('NodeFeaturePublisher', () => {
  it('applies the full set, skips an unchanged one, and coalesces updates made while an apply is in flight', async () => {
    const applied: NodeFeatureObject[] = [];
    const gates: ReturnType<typeof deferred>[] = [];
    const p = new NodeFeaturePublisher({
      nodeName: 'n1',
      namespace: 'gpufleet',
      logger,
      apply: (o) => {
        applied.push(o);
        const g = deferred();
        gates.push(g);
        return g.promise;
      },
    });
    p.update({ 'gpufleet.io/a': '1' });
    p.update({ 'gpufleet.io/a': '2' });
    p.update({ 'gpufleet.io/a': '3', 'kubernetes.io/os': 'linux' });
    await tick();
    expect(applied).toHaveLength(1);
    gates[0].resolve();
    await tick();
    await tick();
    expect(applied).toHaveLength(2);
    expect(applied[1].spec.labels).toEqual({ 'gpufleet.io/a': '3' });
    gates[1].resolve();
    await p.settled();
    expect(p.inStep).toBe(true);
    p.update({ 'kubernetes.io/os': 'linux', 'gpufleet.io/a': '3' });
    await tick();
    expect(applied).toHaveLength(2);
    // A shrunk set is applied whole: the removed label is simply absent.
    p.update({});
    await tick();
    expect(applied[2]).toMatchObject({ metadata: { name: 'gpufleet-n1', namespace: 'gpufleet' }, spec: { labels: {} } });
    gates[2].resolve();
    await p.settled();
  });

  it('retries failures with doubling waits bounded by maxMs, and stops when told', async () => {
    jest.useFakeTimers();
    try {
      const calls: number[] = [];
      let fail = 4;
      const p = new NodeFeaturePublisher({
        nodeName: 'n1',
        namespace: 'gpufleet',
        logger,
        backoff: { initialMs: 100, maxMs: 300 },
        apply: async () => {
          calls.push(Date.now());
          if (fail-- > 0) throw new Error('HTTP 503');
        },
      });
      p.update({ 'gpufleet.io/a': '1' });
      await jest.advanceTimersByTimeAsync(100 + 200 + 300 + 300);
      expect(calls).toHaveLength(5);
      expect(calls.slice(1).map((t, i) => t - calls[i])).toEqual([100, 200, 300, 300]);
      expect(p.inStep).toBe(true);
      expect(logger.warn).toHaveBeenCalledTimes(1);

      fail = 100;
      p.update({ 'gpufleet.io/a': '2' });
      await jest.advanceTimersByTimeAsync(1000);
      const tries = calls.length;
      p.stop();
      await jest.advanceTimersByTimeAsync(5000);
      expect(calls.length).toBe(tries);
      await p.settled();
      expect(p.inStep).toBe(false);
    } finally {
      jest.useRealTimers();
    }
  });
});
