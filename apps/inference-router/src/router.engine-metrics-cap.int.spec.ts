// ENGINE_METRICS_MAX_KIB against real HTTP servers: an engine whose /metrics never ends, one
// that announces a body above the cap, and a well-behaved one. The router cuts the first two
// (the socket closes), counts them, keeps no sample for them, and still reads the third.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from '@gpufleet/testing';
import { RouterHarness, type TestRouter } from './__fixtures__/router-harness';

const VLLM = ['# TYPE vllm:num_requests_running gauge', 'vllm:num_requests_running{engine="0"} 3.0', 'vllm:num_requests_waiting{engine="0"} 1.0', 'vllm:kv_cache_usage_perc{engine="0"} 0.25'].join('\n');

interface FakeEngine {
  readonly endpoint: string;
  readonly server: Server;
  /** Bytes of /metrics written, over every read. */
  written: number;
  /** Reads whose socket the router closed before the body ended. */
  cut: number;
}

async function engine(serve: (res: ServerResponse, e: FakeEngine) => void): Promise<FakeEngine> {
  const e: FakeEngine = { endpoint: '', server: createServer(), written: 0, cut: 0 };
  e.server.on('request', (req, res) => {
    if (req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    res.on('close', () => {
      if (!res.writableFinished) e.cut++;
    });
    serve(res, e);
  });
  await new Promise<void>((resolve) => e.server.listen(0, '127.0.0.1', resolve));
  return Object.assign(e, { endpoint: `http://127.0.0.1:${(e.server.address() as AddressInfo).port}` });
}

/** 16 KiB every 2 ms (8 MB/s) until the reader goes away: the kernel's socket buffers hold little of it. */
function endless(res: ServerResponse, e: FakeEngine): void {
  res.writeHead(200, { 'content-type': 'text/plain' });
  const chunk = `# ${'x'.repeat(16 * 1024 - 3)}\n`;
  const timer = setInterval(() => {
    if (res.destroyed) return clearInterval(timer);
    e.written += chunk.length;
    res.write(chunk);
  }, 2);
  res.on('close', () => clearInterval(timer));
}

let h: RouterHarness;
let router: TestRouter;
let endlessEngine: FakeEngine;
let announced: FakeEngine;
let fine: FakeEngine;

beforeAll(async () => {
  h = await RouterHarness.start();
  endlessEngine = await engine(endless);
  announced = await engine((res, e) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(10 * 1024 * 1024) });
    e.written += 1024;
    res.write('x'.repeat(1024)); // and never the rest
  });
  fine = await engine((res, e) => {
    e.written += VLLM.length;
    res.end(VLLM);
  });
  await h.putDeployment('capped', 'capped/model', [endlessEngine.endpoint, announced.endpoint, fine.endpoint]);
  router = await h.router({ AUTH_REQUIRED: 'false', ENGINE_METRICS_INTERVAL_S: '0.1', ENGINE_METRICS_TIMEOUT_S: '5', ENGINE_METRICS_MAX_KIB: '64' });
  await h.untilReplicas(router, 'capped/model', 3);
});

afterAll(async () => {
  await h?.stop();
  for (const e of [endlessEngine, announced, fine]) {
    e?.server.closeAllConnections();
    await new Promise((resolve) => e?.server.close(resolve));
  }
});

async function metric(series: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${router.opsPort}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(series));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

it('cuts an endless and an announced-oversized /metrics at ENGINE_METRICS_MAX_KIB, counts them, and still reads a normal one', async () => {
  const replicas = router.runtime.directory.pool('capped/model')!.replicas;
  const byId = (e: FakeEngine) => replicas.find((r) => r.id === e.endpoint)!;
  await waitFor('the normal engine’s sample', () => (byId(fine).engineLoad?.running === 3 ? true : undefined));
  await waitFor('three cut reads of each oversized /metrics', () => (endlessEngine.cut >= 3 && announced.cut >= 3 ? true : undefined), { timeoutMs: 10_000 });
  expect(byId(endlessEngine).engineLoad).toBeUndefined();
  expect(byId(announced).engineLoad).toBeUndefined();
  // The router stopped reading near the 64 KiB cap: reading on until the 5 s timeout would have
  // taken some 40 MB per read.
  expect(endlessEngine.written / endlessEngine.cut).toBeLessThan(512 * 1024);
  expect(await metric('gpufleet_router_limit_refusals_total{limit="engine_metrics_max"')).toBeGreaterThanOrEqual(6);
  expect(await metric('gpufleet_router_engine_metrics_errors_total{reason="too_large"')).toBeGreaterThanOrEqual(6);
  expect(await metric('gpufleet_router_engine_metrics_errors_total{reason="timeout"')).toBe(0);
});
