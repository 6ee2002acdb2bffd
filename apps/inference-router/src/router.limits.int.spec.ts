// The router's bounds against hostile peers, all real: an engine (a plain HTTP server here)
// that streams one SSE event that never ends, a client that sends its body a byte at a time,
// and more requests than MAX_IN_FLIGHT. Each is cut at its limit while other requests are served.
import { sendBodySlowly, startHostileEngine, type HostileEngine } from '@gpufleet/testing';
import { chat, post, RouterHarness, type EngineSim, type TestRouter } from './__fixtures__/router-harness';

let h: RouterHarness;
let router: TestRouter;
let good: EngineSim;
let hostile: HostileEngine;

beforeAll(async () => {
  h = await RouterHarness.start();
  good = await h.engine([], 'good-model');
  hostile = await startHostileEngine('hostile-model');
  await h.putDeployment('good', 'good-model', [good.endpoint]);
  await h.putDeployment('hostile', 'hostile-model', [hostile.endpoint]);
  router = await h.router({ MAX_SSE_EVENT_KIB: '256', BODY_TIMEOUT_S: '1', HEADERS_TIMEOUT_S: '1', MAX_IN_FLIGHT: '3', AUTH_REQUIRED: 'false' });
  await h.untilReplicas(router, 'good-model', 1);
  await h.untilReplicas(router, 'hostile-model', 1);
});

afterAll(async () => {
  await hostile?.close();
  await h?.stop();
});

it('cuts a stream whose event never ends at MAX_SSE_EVENT_KIB, with an error event, and keeps serving others', async () => {
  const started = Date.now();
  const cut = post(router.base, '/v1/chat/completions', chat('hostile-model', 'hi', { stream: true }));
  // Meanwhile the router answers other requests.
  const other = await post(router.base, '/v1/chat/completions', chat('good-model', 'hello'));
  expect(other.status).toBe(200);
  const res = await cut;
  expect(res.status).toBe(200);
  expect(res.text).toContain('more than 256 KiB (MAX_SSE_EVENT_KIB); the stream was cut');
  // What reached the client is bounded by the cap, not by how long the engine kept writing.
  expect(res.text.length).toBeLessThan(300 * 1024);
  expect(Date.now() - started).toBeLessThan(10_000);
  const metrics = await (await fetch(`http://127.0.0.1:${router.opsPort}/metrics`)).text();
  expect(metrics).toMatch(/gpufleet_router_limit_refusals_total\{limit="max_sse_event"[^}]*\} 1/);
});

it('drops a client that sends its body too slowly at BODY_TIMEOUT_S with 408', async () => {
  const { answer, elapsedMs } = await sendBodySlowly(router.base);
  expect(elapsedMs).toBeLessThan(5_000);
  expect(answer).toMatch(/^HTTP\/1\.1 408/);
  // And the router still serves.
  expect((await post(router.base, '/v1/chat/completions', chat('good-model', 'hi'))).status).toBe(200);
});

it('answers 503 with Retry-After past MAX_IN_FLIGHT, and serves again once requests finish', async () => {
  const hanging = [0, 1, 2].map(() => post(router.base, '/v1/chat/completions', chat('hostile-model', 'hold')));
  await waitUntil(() => hostile.held.length === 3);
  const refused = await post(router.base, '/v1/chat/completions', chat('good-model', 'one more'));
  expect(refused.status).toBe(503);
  expect(refused.headers.get('retry-after')).toBe('1');
  expect((refused.json as { error: { message: string } }).error.message).toBe('The router has 3 requests in flight, its limit (MAX_IN_FLIGHT); retry shortly.');
  for (const release of hostile.held.splice(0)) release();
  await Promise.all(hanging);
  expect((await post(router.base, '/v1/chat/completions', chat('good-model', 'again'))).status).toBe(200);
});

async function waitUntil(ok: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}
