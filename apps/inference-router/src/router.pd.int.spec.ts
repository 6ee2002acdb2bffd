// Disaggregated prefill/decode through a real router, real engine-sim processes (prefill and
// decode replicas speaking vLLM's NixlConnector kv_transfer_params), real NATS and Redis:
// the two-step flow, streaming, metering once, and failures of the prefill step.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Redis from 'ioredis';
import { Events, RedisKeys, subjectOf, UsageEvent, type UsageRecord } from '@gpufleet/contracts';
import { parseSse } from '@gpufleet/openai-protocol';
import { freePort, waitFor } from '@gpufleet/testing';
import { chat, post, RouterHarness, type EngineSim, type ErrorBody, type TestRouter } from './__fixtures__/router-harness';

const MODELS = ['pd/model', 'meter/model', 'retry/model', 'dead/model', 'broken/model', 'nokv/model', 'starting/model', 'slow/model'];

let h: RouterHarness;
let prefill: EngineSim;
let prefill2: EngineSim;
let decode1: EngineSim;
let decode2: EngineSim;
let failing: EngineSim;
let slowPrefill: EngineSim;
let noConnector: Server;
let noConnectorUrl: string;
let redis: Redis;
const usage: UsageRecord[] = [];

interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

interface ChatBody {
  choices: { message: { content: string } }[];
  usage: Usage;
  kv_transfer_params?: unknown;
}

/** A prefill engine without a KV connector: answers without kv_transfer_params (and refuses prompts saying "refuse" with a 400). */
function startNoConnectorEngine(): Promise<Server> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      if (body.includes('refuse')) {
        res.writeHead(400, { 'content-type': 'application/json', 'x-gpufleet-replica': 'no-connector' });
        res.end(JSON.stringify({ error: { message: "This model's maximum context length is 64 tokens.", type: 'BadRequestError', param: 'messages', code: 400 } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'x-gpufleet-replica': 'no-connector' });
      res.end(JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', choices: [], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } }));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

beforeAll(async () => {
  h = await RouterHarness.start();
  const names = ['--served-model-name', ...MODELS];
  [prefill, prefill2, decode1, decode2, failing, slowPrefill, noConnector] = await Promise.all([
    h.engine(names),
    h.engine(names),
    h.engine(names),
    h.engine(names),
    h.engine(['--error-rate', '1', ...names]),
    // 0.1 s per prompt token: a prefill of a few seconds.
    h.engine(['--prefill-us-per-token', '100000', ...names]),
    startNoConnectorEngine(),
  ]);
  noConnectorUrl = `http://127.0.0.1:${(noConnector.address() as AddressInfo).port}`;
  const sub = h.nc.subscribe(subjectOf(Events.usage, h.cluster));
  void (async () => {
    for await (const msg of sub) usage.push(...UsageEvent.fromJSON(JSON.parse(new TextDecoder().decode(msg.data))).records);
  })();
  redis = new Redis(h.redis.url, { disableClientInfo: true });
});

afterAll(async () => {
  redis?.disconnect();
  await new Promise((resolve) => noConnector?.close(resolve));
  await h?.stop();
});

/** A router serving deployment `name` of `model` with `endpoints` (the first `prefills` of them prefill replicas). */
async function pdRouter(name: string, model: string, endpoints: string[], prefills = 1, env: Record<string, string> = {}): Promise<TestRouter> {
  await h.putDeployment(name, model, endpoints, { roles: 'pd', prefillReplicas: prefills });
  const router = await h.router({ AUTH_REQUIRED: 'false', ROUTING_POLICY: 'round_robin', ...env });
  await h.untilReplicas(router, model, endpoints.length - prefills);
  await waitFor(`${name} prefill replicas`, () => ((router.runtime.directory.prefillPool(`default.${name}`)?.readyCount ?? 0) === prefills ? true : undefined), {
    timeoutMs: 5_000,
    intervalMs: 10,
  });
  return router;
}

async function metric(base: string, series: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(series)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

const routerMetric = (router: TestRouter, series: string): Promise<number> => metric(`http://127.0.0.1:${router.opsPort}`, series);

let promptCount = 0;
/** A prompt of a few hundred tokens no engine has seen yet. */
function freshPrompt(): string {
  const n = ++promptCount;
  return Array.from({ length: 20 }, (_, i) => `Request ${n} section ${i} weighs replica ${i * 11 + n} against its peers.`).join(' ');
}

describe('the two-step flow', () => {
  let router: TestRouter;
  const decodeNames = (): string[] => [decode1.name, decode2.name];

  beforeAll(async () => {
    router = await pdRouter('pd', 'pd/model', [prefill.endpoint, decode1.endpoint, decode2.endpoint]);
  });

  it('prefills on the prefill replica, then answers a non-streamed chat from a decode replica that pulled the KV', async () => {
    const offered = await metric(prefill.endpoint, 'gpufleet_engine_sim_kv_transfer_blocks_total{role="prefill"');
    const external = (await metric(decode1.endpoint, 'vllm:external_prefix_cache_hits_total')) + (await metric(decode2.endpoint, 'vllm:external_prefix_cache_hits_total'));
    const res = await post(router.base, '/v1/chat/completions', chat('pd/model', freshPrompt(), { max_tokens: 5, ignore_eos: true }), { 'x-request-id': 'pd-1' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gpufleet-prefill-replica')).toBe(prefill.name);
    const decoded = res.headers.get('x-gpufleet-decode-replica');
    expect(decodeNames()).toContain(decoded);
    expect(res.headers.get('x-gpufleet-replica')).toBe(decoded);
    expect(res.headers.get('x-request-id')).toBe('pd-1');
    const body = res.json as ChatBody;
    expect(body.usage.completion_tokens).toBe(5);
    expect(body.kv_transfer_params).toBeUndefined();
    // The decode engine computed only the last prompt token: the rest came from the prefill engine.
    expect(body.usage.prompt_tokens_details.cached_tokens).toBe(body.usage.prompt_tokens - 1);
    expect(await metric(prefill.endpoint, 'gpufleet_engine_sim_kv_transfer_blocks_total{role="prefill"')).toBe(offered + Math.ceil(body.usage.prompt_tokens / 16));
    const externalAfter = (await metric(decode1.endpoint, 'vllm:external_prefix_cache_hits_total')) + (await metric(decode2.endpoint, 'vllm:external_prefix_cache_hits_total'));
    expect(externalAfter).toBe(external + body.usage.prompt_tokens - 1);
  });

  it('streams the decode replica’s answer chunk by chunk, without the usage chunk the client did not ask for', async () => {
    const res = await post(router.base, '/v1/chat/completions', chat('pd/model', freshPrompt(), { stream: true, max_tokens: 5, ignore_eos: true }));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    expect(res.headers.get('x-gpufleet-prefill-replica')).toBe(prefill.name);
    expect(decodeNames()).toContain(res.headers.get('x-gpufleet-decode-replica'));
    const events = parseSse(res.text);
    expect(events[events.length - 1]).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as { choices: unknown[]; usage?: unknown });
    expect(chunks).toHaveLength(6); // role + 5 tokens
    expect(chunks.every((c) => c.choices.length > 0 && c.usage === undefined)).toBe(true);
  });

  it('streams with the usage chunk when asked, the pulled prompt reported cached', async () => {
    const res = await post(router.base, '/v1/chat/completions', chat('pd/model', freshPrompt(), { stream: true, stream_options: { include_usage: true } }));
    const events = parseSse(res.text);
    const last = JSON.parse(events[events.length - 2]) as { choices: unknown[]; usage: Usage };
    expect(last.choices).toEqual([]);
    expect(last.usage.completion_tokens).toBe(4);
    expect(last.usage.prompt_tokens_details.cached_tokens).toBe(last.usage.prompt_tokens - 1);
  });

  it('does text completions both ways', async () => {
    const plain = await post(router.base, '/v1/completions', { model: 'pd/model', prompt: freshPrompt(), max_tokens: 3, ignore_eos: true });
    expect(plain.status).toBe(200);
    expect(plain.headers.get('x-gpufleet-prefill-replica')).toBe(prefill.name);
    const body = plain.json as { object: string; usage: Usage };
    expect(body.object).toBe('text_completion');
    expect(body.usage.completion_tokens).toBe(3);
    expect(body.usage.prompt_tokens_details.cached_tokens).toBe(body.usage.prompt_tokens - 1);
    const streamed = await post(router.base, '/v1/completions', { model: 'pd/model', prompt: freshPrompt(), max_tokens: 3, ignore_eos: true, stream: true });
    const events = parseSse(streamed.text);
    expect(events).toHaveLength(4); // 3 tokens, [DONE]
  });

  it('spreads decodes over the decode replicas by the routing policy', async () => {
    const seen = new Set<string>();
    for (let i = 0; i < 4; i++) seen.add((await post(router.base, '/v1/chat/completions', chat('pd/model', `spread ${i}`))).headers.get('x-gpufleet-decode-replica') ?? '');
    expect([...seen].sort()).toEqual(decodeNames().sort());
  });

  it('sends embeddings straight to a decode replica (there is nothing to prefill)', async () => {
    const res = await post(router.base, '/v1/embeddings', { model: 'pd/model', input: 'vectors please' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gpufleet-prefill-replica')).toBeNull();
  });
});

describe('metering', () => {
  it('meters the client-visible usage once, from the decode answer, to the decode replica', async () => {
    const router = await pdRouter('meter', 'meter/model', [prefill.endpoint, decode1.endpoint]);
    const answers: Usage[] = [];
    for (const [i, stream] of [false, true, false].entries()) {
      const res = await post(router.base, '/v1/chat/completions', chat('meter/model', freshPrompt(), { max_tokens: 4, ignore_eos: true, stream, stream_options: stream ? { include_usage: true } : undefined }), {
        'x-request-id': `meter-${i}`,
      });
      expect(res.status).toBe(200);
      const events = stream ? parseSse(res.text) : [];
      answers.push(stream ? (JSON.parse(events[events.length - 2]) as { usage: Usage }).usage : (res.json as ChatBody).usage);
    }
    const records = await waitFor('three usage records', () => {
      const mine = usage.filter((u) => u.requestId.startsWith('meter-'));
      return mine.length >= 3 ? mine : undefined;
    });
    await new Promise((r) => setTimeout(r, 300)); // a later flush would bring any second record
    expect(usage.filter((u) => u.requestId.startsWith('meter-'))).toHaveLength(3);
    for (const [i, answer] of answers.entries()) {
      const record = records.find((r) => r.requestId === `meter-${i}`);
      expect(record).toMatchObject({
        model: 'meter/model',
        deployment: 'default.meter',
        replica: decode1.endpoint,
        promptTokens: answer.prompt_tokens,
        cachedTokens: answer.prompt_tokens - 1,
        completionTokens: 4,
        estimated: false,
        status: 200,
      });
    }
    const totals = await redis.hgetall(RedisKeys.usageTotal(h.cluster, 'anonymous'));
    expect(Number(totals['requests|default.meter|meter/model'])).toBe(3);
    expect(Number(totals['completion_tokens|default.meter|meter/model'])).toBe(12);
    expect(Number(totals['prompt_tokens|default.meter|meter/model'])).toBe(answers.reduce((sum, a) => sum + a.prompt_tokens, 0));
    // Both steps are attempts on engines; neither was retried.
    expect(await routerMetric(router, 'gpufleet_router_upstream_attempts_total{result="ok"')).toBe(6);
  });
});

describe('failures of the prefill step', () => {
  it('retries a failing prefill replica’s 500 on another prefill replica, and ejects it', async () => {
    const router = await pdRouter('retry', 'retry/model', [failing.endpoint, prefill2.endpoint, decode1.endpoint], 2, { EJECT_CONSECUTIVE_FAILURES: '2', EJECT_BASE_S: '30' });
    for (let i = 0; i < 6; i++) {
      const res = await post(router.base, '/v1/chat/completions', chat('retry/model', `retry ${i}`));
      expect(res.status).toBe(200);
      expect(res.headers.get('x-gpufleet-prefill-replica')).toBe(prefill2.name);
      expect(res.headers.get('x-gpufleet-decode-replica')).toBe(decode1.name);
    }
    // Round robin tried the failing replica twice; then it was out and the later requests went straight to the other.
    expect(await routerMetric(router, 'gpufleet_router_upstream_attempts_total{result="server_error"')).toBe(2);
    expect(await routerMetric(router, 'gpufleet_router_retries_total{model="retry/model"')).toBe(2);
    const health = router.runtime.directory.prefillPool('default.retry')?.health;
    expect(health?.isEjected(failing.endpoint)).toBe(true);
    expect(health?.isEjected(prefill2.endpoint)).toBe(false);
  });

  it('retries a prefill replica that refuses connections', async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    const router = await pdRouter('dead', 'dead/model', [dead, prefill2.endpoint, decode2.endpoint], 2);
    for (let i = 0; i < 3; i++) {
      const res = await post(router.base, '/v1/chat/completions', chat('dead/model', `dead ${i}`));
      expect(res.status).toBe(200);
      expect(res.headers.get('x-gpufleet-prefill-replica')).toBe(prefill2.name);
    }
    expect(await routerMetric(router, 'gpufleet_router_upstream_attempts_total{result="connect_error"')).toBeGreaterThan(0);
  });

  it('answers 502, quoting the engine, when every prefill replica failed', async () => {
    const router = await pdRouter('broken', 'broken/model', [failing.endpoint, decode1.endpoint]);
    const res = await post(router.base, '/v1/chat/completions', chat('broken/model', 'x'));
    expect(res.status).toBe(502);
    const body = res.json as ErrorBody;
    expect(body.error.code).toBe('upstream_error');
    expect(body.error.message).toBe(`The prefill step failed: ${failing.endpoint} answered 500: Injected fault: the simulated engine failed this request (ERROR_RATE=1).`);
  });

  it('answers 502 when the prefill engine answers without kv_transfer_params, and passes its 4xx on', async () => {
    const router = await pdRouter('nokv', 'nokv/model', [noConnectorUrl, decode1.endpoint]);
    const res = await post(router.base, '/v1/chat/completions', chat('nokv/model', 'x'));
    expect(res.status).toBe(502);
    expect((res.json as ErrorBody).error.message).toBe(
      `The prefill step failed: prefill replica ${noConnectorUrl} answered without kv_transfer_params: the engine must run with a KV connector ` +
        `(vLLM: --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}')`,
    );
    const refused = await post(router.base, '/v1/chat/completions', chat('nokv/model', 'refuse this'), { 'x-request-id': 'refused-1' });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('x-gpufleet-prefill-replica')).toBe('no-connector');
    expect(refused.headers.get('x-request-id')).toBe('refused-1');
    expect((refused.json as { error: { message: string; code: number } }).error).toMatchObject({ message: "This model's maximum context length is 64 tokens.", code: 400 });
  });

  it('answers 503 while the deployment has no ready prefill replica', async () => {
    const starting = `http://127.0.0.1:${await freePort()}`;
    await h.putDeployment('starting', 'starting/model', [starting, decode1.endpoint], { roles: 'pd', states: { [starting]: 'Starting' } });
    const router = await h.router({ AUTH_REQUIRED: 'false' });
    await waitFor('starting/model', () => router.runtime.directory.pool('starting/model'));
    const res = await post(router.base, '/v1/chat/completions', chat('starting/model', 'x'));
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect((res.json as ErrorBody).error.message).toBe(
      'No ready replica of model `starting/model`: deployment default.starting has 0 of 1 replicas ready (prefill role: 0 of 1 ready); retry shortly.',
    );
  });

  it('times out during the prefill step (504) and stops it when the client goes away, freeing both replicas', async () => {
    const router = await pdRouter('slow', 'slow/model', [slowPrefill.endpoint, decode2.endpoint], 1, { REQUEST_TIMEOUT_S: '1' });
    const started = Date.now();
    const res = await post(router.base, '/v1/chat/completions', chat('slow/model', 'a prompt that takes seconds to prefill'));
    expect(res.status).toBe(504);
    expect((res.json as ErrorBody).error.code).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(3_000);
    const prefillPool = router.runtime.directory.prefillPool('default.slow');
    const decodePool = router.runtime.directory.pool('slow/model');
    expect(prefillPool?.replicas[0].inFlight).toBe(0);
    expect(decodePool?.replicas[0].inFlight).toBe(0);
    expect(await routerMetric(router, 'gpufleet_router_upstream_attempts_total{result="timeout"')).toBe(1);

    const abortedPrefills = (): Promise<number> => metric(slowPrefill.endpoint, 'vllm:request_success_total{model_name="pd/model",engine="0",finished_reason="abort"');
    await waitFor('the timed-out prefill to be aborted', async () => ((await abortedPrefills()) >= 1 ? true : undefined));
    const aborted = await abortedPrefills();
    const client = new AbortController();
    const pending = fetch(`${router.base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chat('slow/model', 'another slow prompt')),
      signal: client.signal,
    }).catch(() => undefined);
    await waitFor('the prefill in flight', () => (prefillPool?.replicas[0].inFlight === 1 ? true : undefined), { intervalMs: 5 });
    expect(decodePool?.replicas[0].inFlight).toBe(1);
    client.abort();
    await pending;
    await waitFor('both replicas free', () => (prefillPool?.replicas[0].inFlight === 0 && decodePool?.replicas[0].inFlight === 0 ? true : undefined), { intervalMs: 5 });
    await waitFor('the prefill engine to abort the request', async () => ((await abortedPrefills()) > aborted ? true : undefined));
  });
});
