import { evaluateReadiness, readinessBody, type ReadinessCheck } from './health';

const ok = (name: string): ReadinessCheck => ({ name, check: () => undefined });
const failing = (name: string, reason: string): ReadinessCheck => ({
  name,
  check: () => {
    throw new Error(reason);
  },
});

describe('readiness', () => {
  it('is ready when every check passes, and when there are none', async () => {
    expect((await evaluateReadiness([ok('nats'), { name: 'kv', check: async () => undefined }])).ready).toBe(true);
    expect((await evaluateReadiness([])).ready).toBe(true);
  });

  it('names each failed check with its reason', async () => {
    const report = await evaluateReadiness([
      failing('nats', 'disconnected'),
      ok('kv'),
      { name: 'lease', check: () => Promise.reject(new Error('held by scheduler-1')) },
    ]);
    expect(report.ready).toBe(false);
    expect(readinessBody(report)).toEqual({
      status: 'not ready',
      checks: { nats: 'disconnected', kv: 'ok', lease: 'held by scheduler-1' },
      failed: ['nats: disconnected', 'lease: held by scheduler-1'],
    });
  });

  it('fails a check that does not answer in time, without waiting for it', async () => {
    const started = Date.now();
    const report = await evaluateReadiness([{ name: 'redis', check: () => new Promise<void>(() => undefined) }], 50);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(readinessBody(report).failed).toEqual(['redis: no answer within 50 ms']);
  });

  it('runs checks concurrently', async () => {
    // every check is started before any answers (not timed: a loaded machine stretches any delay)
    let running = 0;
    let most = 0;
    const gate: Array<() => void> = [];
    const held = (name: string): ReadinessCheck => ({
      name,
      check: () =>
        new Promise<void>((r) => {
          most = Math.max(most, ++running);
          gate.push(() => {
            running--;
            r();
          });
          if (gate.length === 3) for (const open of gate) open();
        }),
    });
    const report = await evaluateReadiness([held('a'), held('b'), held('c')], 10_000);
    expect(report.ready).toBe(true);
    expect(most).toBe(3);
  });

  it('reports non-Error throws readably', async () => {
    const report = await evaluateReadiness([
      {
        name: 'gpu',
        check: () => {
          throw 'no devices';
        },
      },
    ]);
    expect(readinessBody(report).checks).toEqual({ gpu: 'no devices' });
  });

  it('reports a ready body without a failed list', async () => {
    expect(readinessBody(await evaluateReadiness([ok('nats')]))).toEqual({ status: 'ready', checks: { nats: 'ok' } });
  });
});
