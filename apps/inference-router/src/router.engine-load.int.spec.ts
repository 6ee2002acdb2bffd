// Load seen through the engines' /metrics: requests another router (here: a client talking to
// the engine directly) keeps on one replica steer this router's picks to the other.
import { freePort, waitFor } from '@gpufleet/testing';
import { chat, post, RouterHarness, type EngineSim, type TestRouter } from './__fixtures__/router-harness';

const MODEL = 'load/model';
/** Requests the "other router" keeps running on the busy engine. */
const ELSEWHERE = 4;

let h: RouterHarness;
let busy: EngineSim;
let idle: EngineSim;
const elsewhere = new AbortController();

beforeAll(async () => {
  h = await RouterHarness.start();
  // 20 ms per token: the other router's 1,000-token requests outlast the test; ours take 40 ms.
  const args = ['--itl-ms', '20', '--served-model-name', MODEL];
  [busy, idle] = await Promise.all([h.engine(args), h.engine(args)]);
  await h.putDeployment('load', MODEL, [busy.endpoint, idle.endpoint]);
  for (let i = 0; i < ELSEWHERE; i++) {
    void fetch(`${busy.endpoint}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chat(MODEL, `another router's request ${i}`, { max_tokens: 1000, ignore_eos: true })),
      signal: elsewhere.signal,
    }).catch(() => undefined);
  }
});

afterAll(async () => {
  elsewhere.abort();
  await h?.stop();
});

async function metric(router: TestRouter, series: string): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${router.opsPort}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(series));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

async function servedBy(router: TestRouter, requests: number): Promise<string[]> {
  const names: string[] = [];
  for (let i = 0; i < requests; i++) {
    const res = await post(router.base, '/v1/chat/completions', chat(MODEL, `q${i}`, { max_tokens: 2, ignore_eos: true }));
    expect(res.status).toBe(200);
    names.push(res.headers.get('x-gpufleet-replica') ?? '');
  }
  return names;
}

it('least_request sends new requests away from the replica other routers keep busy, seen in its /metrics', async () => {
  const router = await h.router({ AUTH_REQUIRED: 'false', ROUTING_POLICY: 'least_request', ENGINE_METRICS_INTERVAL_S: '0.1' });
  await h.untilReplicas(router, MODEL, 2);
  const replica = router.runtime.directory.pool(MODEL)?.replicas.find((r) => r.id === busy.endpoint);
  await waitFor('the busy engine’s load in its metrics', () => {
    const load = replica?.engineLoad;
    return load !== undefined && load.running + load.waiting === ELSEWHERE ? true : undefined;
  });
  // In-flight counts alone (0 and 0 before each request) would alternate between the two.
  expect(await servedBy(router, 6)).toEqual(Array(6).fill(idle.name));
  expect(await metric(router, `gpufleet_router_engine_requests_running{model="${MODEL}",replica="${busy.endpoint}"`)).toBe(ELSEWHERE);
  expect(await metric(router, `gpufleet_router_engine_requests_waiting{model="${MODEL}",replica="${busy.endpoint}"`)).toBe(0);
  expect(await metric(router, `gpufleet_router_engine_kv_cache_usage{model="${MODEL}",replica="${busy.endpoint}"`)).toBeGreaterThan(0);
});

it('with ENGINE_METRICS_INTERVAL_S=0 sees only its own in-flight counts', async () => {
  const router = await h.router({ AUTH_REQUIRED: 'false', ROUTING_POLICY: 'least_request', ENGINE_METRICS_INTERVAL_S: '0' });
  await h.untilReplicas(router, MODEL, 2);
  const served = await servedBy(router, 6);
  // Ties rotate: about half go to the busy replica.
  expect(served.filter((name) => name === busy.name).length).toBeGreaterThanOrEqual(2);
  expect(router.runtime.directory.pool(MODEL)?.replicas.every((r) => r.engineLoad === undefined)).toBe(true);
});

it('counts failed reads of a replica’s /metrics and keeps no sample for it', async () => {
  const dead = `http://127.0.0.1:${await freePort()}`;
  await h.putDeployment('dead', 'dead/model', [dead]);
  const router = await h.router({ AUTH_REQUIRED: 'false', ENGINE_METRICS_INTERVAL_S: '0.1' });
  await h.untilReplicas(router, 'dead/model', 1);
  await waitFor('a failed read counted', async () => ((await metric(router, 'gpufleet_router_engine_metrics_errors_total{reason="connect_error"')) ?? 0) >= 2 || undefined);
  expect(router.runtime.directory.pool('dead/model')?.replicas[0].engineLoad).toBeUndefined();
});
