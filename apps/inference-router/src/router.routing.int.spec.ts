// Routing against real engine-sim processes: retries before the first byte, passive ejection
// and re-entry, prefix-cache affinity, session affinity and the bounded queue.
import { freePort, waitFor } from '@gpufleet/testing';
import { chat, post, RouterHarness, type EngineSim, type TestRouter } from './__fixtures__/router-harness';

let h: RouterHarness;
let one: EngineSim;
let two: EngineSim;
let failing: EngineSim;
let loading: EngineSim;
let slow: EngineSim;

beforeAll(async () => {
  h = await RouterHarness.start();
  const names = ['--served-model-name', 'retry/model', 'eject/model', 'cache/model', 'session/model', 'loading/model'];
  [one, two, failing, slow, loading] = await Promise.all([
    h.engine(names),
    h.engine(names),
    h.engine(['--error-rate', '1', ...names]),
    h.engine(['--itl-ms', '50', '--served-model-name', 'queue/model']),
    h.engine(['--slow-start-s', '600', ...names], 'test/model', 'healthz'),
  ]);
});

afterAll(() => h?.stop());

async function metric(router: TestRouter, series: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${router.opsPort}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(series)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

describe('retries', () => {
  it('retries on another replica when a connection fails before the first byte, and ejects the dead replica', async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    await h.putDeployment('retry', 'retry/model', [dead, one.endpoint]);
    const router = await h.router({ AUTH_REQUIRED: 'false', ROUTING_POLICY: 'round_robin', EJECT_CONSECUTIVE_FAILURES: '2', EJECT_BASE_S: '30' });
    await h.untilReplicas(router, 'retry/model', 2);
    for (let i = 0; i < 6; i++) {
      const res = await post(router.base, '/v1/chat/completions', chat('retry/model', `q${i}`));
      expect(res.status).toBe(200);
      expect(res.headers.get('x-gpufleet-replica')).toBe(one.name);
    }
    // Two connect errors ejected it: the later requests did not try it at all.
    expect(await metric(router, 'gpufleet_router_upstream_attempts_total{result="connect_error"')).toBe(2);
    expect(await metric(router, 'gpufleet_router_retries_total{model="retry/model"')).toBe(2);
    expect(await metric(router, `gpufleet_router_replica_ejected{model="retry/model",replica="${dead}"`)).toBe(1);
  });

  it('retries an engine’s 503 (still loading) elsewhere', async () => {
    await h.putDeployment('loading', 'loading/model', [loading.endpoint, two.endpoint]);
    const router = await h.router({ AUTH_REQUIRED: 'false', ROUTING_POLICY: 'round_robin' });
    await h.untilReplicas(router, 'loading/model', 2);
    for (let i = 0; i < 4; i++) expect((await post(router.base, '/v1/chat/completions', chat('loading/model', `l${i}`))).status).toBe(200);
    expect(await metric(router, 'gpufleet_router_upstream_attempts_total{result="unavailable"')).toBeGreaterThan(0);
  });

  it('answers 502 without retrying when the engine failed the request (a 500), ejects it, and lets it back after the cool-down', async () => {
    await h.putDeployment('eject', 'eject/model', [failing.endpoint, two.endpoint]);
    const router = await h.router({ AUTH_REQUIRED: 'false', ROUTING_POLICY: 'round_robin', EJECT_CONSECUTIVE_FAILURES: '2', EJECT_BASE_S: '0.5' });
    await h.untilReplicas(router, 'eject/model', 2);
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await post(router.base, '/v1/chat/completions', chat('eject/model', `e${i}`))).status);
    // Round robin alternates: the failing replica answers 500 (relayed as 502) twice, then is out.
    expect(statuses.filter((s) => s === 502)).toHaveLength(2);
    expect(statuses.slice(4)).toEqual([200, 200, 200, 200]);
    expect(await metric(router, `gpufleet_router_replica_ejected{model="eject/model",replica="${failing.endpoint}"`)).toBe(1);
    await new Promise((r) => setTimeout(r, 600));
    expect(await metric(router, `gpufleet_router_replica_ejected{model="eject/model",replica="${failing.endpoint}"`)).toBe(0);
    // Half-open: one more failure and it is out again, for twice as long.
    const again: number[] = [];
    for (let i = 0; i < 2; i++) again.push((await post(router.base, '/v1/chat/completions', chat('eject/model', `again${i}`))).status);
    expect(again.sort()).toEqual([200, 502]);
    expect(router.runtime.directory.pool('eject/model')?.health.health(failing.endpoint)).toMatchObject({ state: 'ejected', ejections: 2 });
  });
});

describe('routing policies', () => {
  it('cache_aware sends prompts that share a prefix to the replica that served it before', async () => {
    await h.putDeployment('cache', 'cache/model', [one.endpoint, two.endpoint]);
    const router = await h.router({ AUTH_REQUIRED: 'false', ROUTING_POLICY: 'cache_aware' });
    await h.untilReplicas(router, 'cache/model', 2);
    const system = { role: 'system', content: 'You are a meticulous assistant for the gpufleet project. '.repeat(10) };
    const replicasFor = async (prefix: string): Promise<Set<string>> => {
      const seen = new Set<string>();
      for (let i = 0; i < 6; i++) {
        const res = await post(router.base, '/v1/chat/completions', {
          model: 'cache/model',
          messages: [{ ...system, content: `${prefix} ${system.content}` }, { role: 'user', content: `question ${i}` }],
          max_tokens: 2,
        });
        expect(res.status).toBe(200);
        seen.add(res.headers.get('x-gpufleet-replica') ?? '');
      }
      return seen;
    };
    const first = await replicasFor('Alpha.');
    const second = await replicasFor('Beta.');
    expect(first.size).toBe(1);
    expect(second.size).toBe(1);
    // The second conversation started on the less loaded (here: least recently picked) replica.
    expect([...first][0]).not.toBe([...second][0]);
  });

  it('session keeps a session on one replica', async () => {
    await h.putDeployment('session', 'session/model', [one.endpoint, two.endpoint]);
    const router = await h.router({ AUTH_REQUIRED: 'false', ROUTING_POLICY: 'session' });
    await h.untilReplicas(router, 'session/model', 2);
    const replicas = new Map<string, Set<string>>();
    for (let i = 0; i < 12; i++) {
      const session = `s${i % 4}`;
      const res = await post(router.base, '/v1/chat/completions', chat('session/model', `m${i}`), { 'x-session-id': session });
      if (!replicas.has(session)) replicas.set(session, new Set());
      replicas.get(session)?.add(res.headers.get('x-gpufleet-replica') ?? '');
    }
    for (const seen of replicas.values()) expect(seen.size).toBe(1);
  });
});

describe('bounded queueing', () => {
  it('queues requests beyond MAX_INFLIGHT_PER_REPLICA, up to QUEUE_MAX, and refuses the rest with 503', async () => {
    await h.putDeployment('queue', 'queue/model', [slow.endpoint]);
    const router = await h.router({ AUTH_REQUIRED: 'false', MAX_INFLIGHT_PER_REPLICA: '1', QUEUE_MAX: '1' });
    await h.untilReplicas(router, 'queue/model', 1);
    const body = chat('queue/model', 'busy', { max_tokens: 6, ignore_eos: true });
    const running = post(router.base, '/v1/chat/completions', body);
    await waitFor('one request in flight', () => (router.runtime.directory.pool('queue/model')?.replicas[0].inFlight === 1 ? true : undefined), { intervalMs: 5 });
    const queued = post(router.base, '/v1/chat/completions', body);
    await waitFor('one request queued', () => (router.runtime.directory.pool('queue/model')?.queued === 1 ? true : undefined), { intervalMs: 5 });
    const refused = await post(router.base, '/v1/chat/completions', body);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect((await running).status).toBe(200);
    expect((await queued).status).toBe(200);
  });
});
