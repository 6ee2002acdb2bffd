import type { EngineLoad } from '@gpufleet/routing-core';
import { EngineMetricsPoller, type EngineMetricsFailure, type EngineMetricsPollerOptions } from './engine-metrics-poller';

interface FakeReplica {
  id: string;
  inFlight: number;
  removed: boolean;
  engineLoad: EngineLoad | undefined;
}

const replica = (id: string, inFlight = 0): FakeReplica => ({ id, inFlight, removed: false, engineLoad: undefined });

const VLLM = (running: number, waiting: number, kv: number): string =>
  [
    '# TYPE vllm:num_requests_running gauge',
    `vllm:num_requests_running{engine="0",model_name="m"} ${running}.0`,
    `vllm:num_requests_waiting{engine="0",model_name="m"} ${waiting}.0`,
    `vllm:kv_cache_usage_perc{engine="0",model_name="m"} ${kv}`,
  ].join('\n');

/** A fake engine fleet: each read waits until the test answers it. */
class Engines {
  readonly calls: { url: string; init: RequestInit; resolve: (res: Response) => void; reject: (err: unknown) => void }[] = [];
  readonly fetch = (url: string, init: RequestInit): Promise<Response> =>
    new Promise<Response>((resolve, reject) => {
      this.calls.push({ url, init, resolve, reject });
      init.signal?.addEventListener('abort', () => reject(init.signal?.reason));
    });

  answer(index: number, body: string, status = 200): Promise<void> {
    this.calls[index].resolve(new Response(body, { status }));
    return settle();
  }

  fail(index: number, err: unknown): Promise<void> {
    this.calls[index].reject(err);
    return settle();
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
}

const pollers: EngineMetricsPoller[] = [];
afterEach(() => {
  for (const p of pollers.splice(0)) p.stop();
});

function poller(pools: FakeReplica[][], engines: Engines, clock: { now: number }, extra: Partial<EngineMetricsPollerOptions> = {}) {
  const errors: EngineMetricsFailure[] = [];
  const warnings: string[] = [];
  const p = new EngineMetricsPoller({
    directory: { everyPool: () => pools.map((replicas) => ({ replicas })) },
    metrics: { engineMetricsError: (reason) => errors.push(reason), oversizedEngineMetrics: () => undefined },
    logger: { warn: ((_obj: unknown, message: string) => warnings.push(message)) as never },
    intervalMs: 1_000,
    timeoutMs: 5_000,
    maxBodyBytes: 1024 * 1024,
    fetch: engines.fetch,
    now: () => clock.now,
    ...extra,
  });
  pollers.push(p);
  return { poller: p, errors, warnings };
}

describe('EngineMetricsPoller', () => {
  it('stores each engine’s load with this router’s in-flight count when the answer arrived', async () => {
    const engines = new Engines();
    const clock = { now: 0 };
    const a = replica('http://10.0.0.1:8000', 1);
    const { poller: p } = poller([[a]], engines, clock, { headers: { authorization: 'Bearer k' } });
    p.tick();
    expect(engines.calls.map((c) => c.url)).toEqual(['http://10.0.0.1:8000/metrics']);
    expect(engines.calls[0].init.headers).toEqual({ authorization: 'Bearer k' });
    a.inFlight = 2; // one more sent while the read was on its way
    await engines.answer(0, VLLM(5, 3, 0.4));
    expect(a.engineLoad).toEqual({ running: 5, waiting: 3, kvCacheUsage: 0.4, inFlightAtSample: 2 });
  });

  it('keeps one read in flight per endpoint, and reads an endpoint shared by two pools once', async () => {
    const engines = new Engines();
    const clock = { now: 0 };
    const inModelA = replica('http://10.0.0.1:8000', 1);
    const inModelB = replica('http://10.0.0.1:8000', 4);
    const other = replica('http://10.0.0.2:8000');
    const { poller: p } = poller([[inModelA, other], [inModelB]], engines, clock);
    p.tick();
    clock.now = 1_000;
    p.tick(); // both still reading: nothing new
    expect(engines.calls.map((c) => c.url)).toEqual(['http://10.0.0.1:8000/metrics', 'http://10.0.0.2:8000/metrics']);
    await engines.answer(0, VLLM(6, 0, 0.1));
    expect(inModelA.engineLoad?.inFlightAtSample).toBe(1);
    expect(inModelB.engineLoad?.inFlightAtSample).toBe(4);
    clock.now = 2_000;
    p.tick();
    expect(engines.calls.map((c) => c.url)).toEqual(['http://10.0.0.1:8000/metrics', 'http://10.0.0.2:8000/metrics', 'http://10.0.0.1:8000/metrics']);
  });

  it('keeps a sample through a failed read, drops it once 3 intervals old, counts every failure and logs once a minute', async () => {
    const engines = new Engines();
    const clock = { now: 0 };
    const a = replica('http://10.0.0.1:8000');
    const { poller: p, errors, warnings } = poller([[a]], engines, clock);
    p.tick();
    await engines.answer(0, VLLM(2, 0, 0.2));
    expect(a.engineLoad).toBeDefined();

    const failures: [() => Promise<void>, EngineMetricsFailure][] = [
      [() => engines.fail(1, Object.assign(new TypeError('fetch failed'), { cause: new Error('connect ECONNREFUSED 10.0.0.1:8000') })), 'connect_error'],
      [() => engines.answer(2, 'Internal Server Error', 500), 'bad_status'],
      [() => engines.answer(3, 'process_cpu_seconds_total 3\n'), 'no_load_series'],
      [() => engines.fail(4, new TypeError('fetch failed')), 'connect_error'],
    ];
    for (const [i, [fail]] of failures.entries()) {
      clock.now = (i + 1) * 1_000;
      p.tick();
      // Fresh enough until 3 intervals have passed since it was taken.
      expect(a.engineLoad === undefined).toBe(clock.now > 3_000);
      await fail();
    }
    expect(errors).toEqual(failures.map(([, reason]) => reason));
    expect(warnings).toEqual([
      "engine metrics: http://10.0.0.1:8000/metrics failed: connect ECONNREFUSED 10.0.0.1:8000; routing counts only this router's requests on it until it answers (logged once a minute)",
    ]);
    clock.now = 61_000;
    p.tick();
    await engines.answer(5, 'not found', 404);
    expect(warnings[1]).toContain('http://10.0.0.1:8000/metrics answered 404');
  });

  it('gives up on a read after the timeout', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate'] });
    try {
      const engines = new Engines();
      const { poller: p, errors, warnings } = poller([[replica('http://10.0.0.1:8000')]], engines, { now: 0 });
      p.tick();
      jest.advanceTimersByTime(4_999);
      await settle();
      expect(errors).toEqual([]);
      jest.advanceTimersByTime(1);
      await settle();
      expect(engines.calls[0].init.signal?.aborted).toBe(true);
      expect(errors).toEqual(['timeout']);
      expect(warnings[0]).toContain('http://10.0.0.1:8000/metrics did not answer within 5 s (ENGINE_METRICS_TIMEOUT_S)');
    } finally {
      jest.useRealTimers();
    }
  });

  it('reads nothing when disabled, and on stop aborts reads and drops every sample', async () => {
    const engines = new Engines();
    const clock = { now: 0 };
    const a = replica('http://10.0.0.1:8000');
    const disabled = poller([[a]], engines, clock, { intervalMs: 0 });
    disabled.poller.start();
    expect(disabled.poller.enabled).toBe(false);
    expect(engines.calls).toHaveLength(0);

    const { poller: p, errors } = poller([[a]], engines, clock);
    p.tick();
    await engines.answer(0, VLLM(1, 0, 0));
    expect(a.engineLoad).toBeDefined();
    clock.now = 1_000;
    p.tick();
    p.stop();
    await settle();
    expect(engines.calls[1].init.signal?.aborted).toBe(true);
    expect(a.engineLoad).toBeUndefined();
    expect(errors).toEqual([]);
  });

  it('cuts a body past maxBodyBytes (streamed or announced), counts each cut read and logs once per endpoint', async () => {
    const engines = new Engines();
    const clock = { now: 0 };
    const a = replica('http://10.0.0.1:8000');
    let oversized = 0;
    const { poller: p, errors, warnings } = poller([[a]], engines, clock, {
      maxBodyBytes: 1024,
      metrics: { engineMetricsError: (reason) => errors.push(reason), oversizedEngineMetrics: () => oversized++ },
    });
    p.tick();
    await engines.answer(0, `${VLLM(1, 0, 0)}\n# ${'x'.repeat(2048)}`);
    clock.now = 1_000;
    p.tick();
    engines.calls[1].resolve(new Response('x'.repeat(10), { headers: { 'content-length': '999999' } }));
    await settle();
    clock.now = 120_000; // past the once-a-minute rule of other failures: still no second line
    p.tick();
    await engines.answer(2, 'x'.repeat(5_000));
    expect(errors).toEqual(['too_large', 'too_large', 'too_large']);
    expect(oversized).toBe(3);
    expect(a.engineLoad).toBeUndefined();
    expect(warnings).toEqual([
      "engine metrics: http://10.0.0.1:8000/metrics sent more than 1 KiB (ENGINE_METRICS_MAX_KIB); the read was cut; routing counts only this router's requests on it (logged once)",
    ]);
    clock.now = 121_000;
    p.tick();
    await engines.answer(3, VLLM(2, 0, 0.1));
    expect(a.engineLoad?.running).toBe(2);
  });

  it('forgets endpoints that left every pool', async () => {
    const engines = new Engines();
    const clock = { now: 0 };
    const pools = [[replica('http://10.0.0.1:8000'), replica('http://10.0.0.2:8000')]];
    const { poller: p } = poller(pools, engines, clock);
    p.tick();
    await engines.answer(0, VLLM(1, 0, 0));
    await engines.answer(1, VLLM(1, 0, 0));
    pools[0].pop();
    clock.now = 1_000;
    p.tick();
    expect(engines.calls.slice(2).map((c) => c.url)).toEqual(['http://10.0.0.1:8000/metrics']);
  });
});
