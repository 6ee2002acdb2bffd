// The OpenAI API through a real router, real engine-sim processes, real NATS and Redis:
// proxying, streaming and metering, and every error status the router answers.
import { request as httpRequest } from 'node:http';
import Redis from 'ioredis';
import { Events, RedisKeys, subjectOf, UsageEvent, type UsageRecord } from '@gpufleet/contracts';
import { parseSse } from '@gpufleet/openai-protocol';
import { waitFor } from '@gpufleet/testing';
import { chat, post, RouterHarness, type EngineSim, type ErrorBody, type TestRouter } from './__fixtures__/router-harness';

const MODEL = 'test/model';
let h: RouterHarness;
let sim: EngineSim;
let failing: EngineSim;
let slow: EngineSim;
let router: TestRouter;
let redis: Redis;
const usage: UsageRecord[] = [];

beforeAll(async () => {
  h = await RouterHarness.start();
  // Engines answer to the served model names of the deployments that list them, as real ones do.
  [sim, failing, slow] = await Promise.all([
    h.engine(['--seed', '3', '--served-model-name', MODEL, 'pd/model', 'late/model']),
    h.engine(['--error-rate', '1', '--served-model-name', 'broken/model', 'pd/model']),
    h.engine(['--itl-ms', '100', '--served-model-name', 'slow/model']),
  ]);
  await h.putDeployment('chat', MODEL, [sim.endpoint]);
  await h.putDeployment('broken', 'broken/model', [failing.endpoint]);
  await h.putDeployment('slow', 'slow/model', [slow.endpoint]);
  await h.putDeployment('starting', 'starting/model', ['http://127.0.0.1:9'], { states: { 'http://127.0.0.1:9': 'Starting' } });
  router = await h.router({ AUTH_REQUIRED: 'false', REQUEST_TIMEOUT_S: '1' });
  const sub = h.nc.subscribe(subjectOf(Events.usage, h.cluster));
  void (async () => {
    for await (const msg of sub) usage.push(...UsageEvent.fromJSON(JSON.parse(new TextDecoder().decode(msg.data))).records);
  })();
  redis = new Redis(h.redis.url, { disableClientInfo: true });
});

afterAll(async () => {
  redis?.disconnect();
  await h?.stop();
});

interface ChatBody {
  id: string;
  choices: { message: { content: string } }[];
  usage: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details: { cached_tokens: number } };
}

describe('proxying', () => {
  it('answers a chat completion from the model’s replica, echoing x-request-id', async () => {
    const res = await post(router.base, '/v1/chat/completions', chat(MODEL, 'Hello router', { ignore_eos: true }), { 'x-request-id': 'req-1' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gpufleet-replica')).toBe(sim.name);
    expect(res.headers.get('x-request-id')).toBe('req-1');
    const body = res.json as ChatBody;
    expect(body.id).toMatch(/^chatcmpl-/);
    expect(body.usage.completion_tokens).toBe(4);
  });

  it('answers completions and embeddings, and lists the served models', async () => {
    const completion = await post(router.base, '/v1/completions', { model: MODEL, prompt: 'Once upon', max_tokens: 3 });
    expect(completion.status).toBe(200);
    expect((completion.json as { object: string }).object).toBe('text_completion');
    const embedding = await post(router.base, '/v1/embeddings', { model: MODEL, input: ['a', 'b'] });
    expect(embedding.status).toBe(200);
    expect((embedding.json as { data: unknown[] }).data).toHaveLength(2);
    const models = (await (await fetch(`${router.base}/v1/models`)).json()) as { data: { id: string; object: string }[] };
    expect(models.data.map((m) => m.id)).toEqual(['broken/model', 'slow/model', 'starting/model', MODEL]);
    expect(models.data[0].object).toBe('model');
  });

  it('streams chunk by chunk, without the usage chunk the client did not ask for, and meters it', async () => {
    const res = await post(router.base, '/v1/chat/completions', chat(MODEL, 'Stream it', { stream: true, max_tokens: 5, ignore_eos: true }), { 'x-request-id': 'stream-1' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const events = parseSse(res.text);
    expect(events[events.length - 1]).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as { choices: unknown[]; usage?: unknown });
    expect(chunks.every((c) => c.choices.length > 0 && c.usage === undefined)).toBe(true);
    expect(chunks).toHaveLength(6); // role + 5 tokens
    const record = await waitFor('the usage event of stream-1', () => usage.find((u) => u.requestId === 'stream-1'));
    expect(record).toMatchObject({ keyId: 'anonymous', model: MODEL, deployment: 'default.chat', replica: sim.endpoint, api: 'chat.completions', completionTokens: 5, estimated: false, status: 200, stream: true });
    expect(record.promptTokens).toBeGreaterThan(0);
  });

  it('keeps the usage chunk when the client asked for it', async () => {
    const res = await post(router.base, '/v1/chat/completions', chat(MODEL, 'Stream with usage', { stream: true, stream_options: { include_usage: true } }));
    const events = parseSse(res.text);
    const last = JSON.parse(events[events.length - 2]) as { choices: unknown[]; usage: { completion_tokens: number } };
    expect(last.choices).toEqual([]);
    expect(last.usage.completion_tokens).toBe(4);
  });

  it('meters prompt, cached and completion tokens into Redis per key, model and deployment', async () => {
    const prompt = 'A long shared system prompt that the engine caches in blocks of sixteen tokens. '.repeat(8);
    await post(router.base, '/v1/chat/completions', chat(MODEL, prompt), { 'x-request-id': 'cache-1' });
    await post(router.base, '/v1/chat/completions', chat(MODEL, prompt), { 'x-request-id': 'cache-2' });
    const second = await waitFor('usage of cache-2', () => usage.find((u) => u.requestId === 'cache-2'));
    expect(second.cachedTokens).toBeGreaterThan(0);
    const totals = await waitFor('usage counters in Redis', async () => {
      const hash = await redis.hgetall(RedisKeys.usageTotal(h.cluster, 'anonymous'));
      return Number(hash[`cached_tokens|default.chat|${MODEL}`] ?? 0) >= second.cachedTokens ? hash : undefined;
    });
    expect(Number(totals[`requests|default.chat|${MODEL}`])).toBeGreaterThanOrEqual(2);
    expect(Number(totals[`prompt_tokens|default.chat|${MODEL}`])).toBeGreaterThan(0);
    const day = new Date().toISOString().slice(0, 10);
    expect(await redis.ttl(RedisKeys.usageDay(h.cluster, day, 'anonymous'))).toBeGreaterThan(86_400);
    const metrics = await (await fetch(`http://127.0.0.1:${router.opsPort}/metrics`)).text();
    expect(metrics).toMatch(/gpufleet_router_tokens_total\{key="anonymous",model="test\/model",deployment="default.chat",kind="cached"[^}]*\} [1-9]/);
  });

  it('prefills a prefill/decode deployment’s requests on its prefill replica, then answers from its decode replica', async () => {
    // One engine in both roles; router.pd.int.spec.ts covers the flow in depth.
    await h.putDeployment('pd', 'pd/model', [sim.endpoint, sim.endpoint], { roles: 'pd' });
    await h.untilReplicas(router, 'pd/model', 1);
    const res = await post(router.base, '/v1/chat/completions', chat('pd/model', 'decode please'));
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gpufleet-prefill-replica')).toBe(sim.name);
    expect(res.headers.get('x-gpufleet-decode-replica')).toBe(sim.name);
  });

  it('aborts the engine’s work when the client goes away mid-stream', async () => {
    const before = await engineMetric(slow, 'vllm:request_success_total', 'finished_reason="abort"');
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no first chunk')), 5_000);
      const req = httpRequest(`${router.base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
        res.once('data', () => {
          clearTimeout(timer);
          req.destroy();
          resolve();
        });
      });
      req.on('error', () => undefined);
      req.end(JSON.stringify(chat('slow/model', 'long answer', { stream: true, max_tokens: 50, ignore_eos: true })));
    });
    await waitFor('the engine to count an aborted request', async () => ((await engineMetric(slow, 'vllm:request_success_total', 'finished_reason="abort"')) > before ? true : undefined));
    await waitFor('the replica to be free again', () => (router.runtime.directory.pool('slow/model')?.replicas[0].inFlight === 0 ? true : undefined));
  });
});

describe('errors', () => {
  const expectError = (res: { status: number; json: unknown }, status: number, code: string | null, param: string | null = null): ErrorBody => {
    expect(res.status).toBe(status);
    const body = res.json as ErrorBody;
    expect(body.error.code).toBe(code);
    expect(body.error.param).toBe(param);
    expect(typeof body.error.message).toBe('string');
    expect(typeof body.error.type).toBe('string');
    return body;
  };

  it('400: a body that is not JSON, and a bad field named in param', async () => {
    const bad = expectError(await post(router.base, '/v1/chat/completions', '{"model": '), 400, null);
    expect(bad.error.message).toContain('not valid JSON');
    const field = expectError(await post(router.base, '/v1/chat/completions', { model: MODEL, messages: [{ role: 'bot', content: 'x' }] }), 400, null, 'messages[0].role');
    expect(field.error.type).toBe('invalid_request_error');
    expectError(await post(router.base, '/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'x' }], max_tokens: 0 }), 400, null, 'max_tokens');
  });

  it('404: an unknown model, listing the served ones; an unknown route', async () => {
    const body = expectError(await post(router.base, '/v1/chat/completions', chat('nope/model', 'x')), 404, 'model_not_found', 'model');
    expect(body.error.message).toContain(MODEL);
    expectError(await post(router.base, '/v1/nothing', {}), 404, 'not_found');
  });

  it('405: a wrong method, with Allow', async () => {
    const res = await fetch(`${router.base}/v1/chat/completions`);
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
  });

  it('503: a model without a ready replica, with Retry-After', async () => {
    const res = await post(router.base, '/v1/chat/completions', chat('starting/model', 'x'));
    const body = expectError(res, 503, 'service_unavailable');
    expect(res.headers.get('retry-after')).toBe('5');
    expect(body.error.message).toContain('default.starting has 0 of 1 replicas ready');
  });

  it('502: an engine that fails the request, quoting it', async () => {
    const body = expectError(await post(router.base, '/v1/chat/completions', chat('broken/model', 'x')), 502, 'upstream_error');
    expect(body.error.message).toContain(`${failing.endpoint} answered 500: Injected fault`);
  });

  it('504: no answer within REQUEST_TIMEOUT_S; mid-stream, an error event and [DONE]', async () => {
    const started = Date.now();
    const body = expectError(await post(router.base, '/v1/chat/completions', chat('slow/model', 'x', { max_tokens: 30, ignore_eos: true })), 504, 'timeout');
    expect(body.error.message).toContain('REQUEST_TIMEOUT_S');
    expect(Date.now() - started).toBeLessThan(3_000);
    const stream = await post(router.base, '/v1/chat/completions', chat('slow/model', 'x', { max_tokens: 30, ignore_eos: true, stream: true }));
    expect(stream.status).toBe(200);
    const events = parseSse(stream.text);
    expect(events[events.length - 1]).toBe('[DONE]');
    expect((JSON.parse(events[events.length - 2]) as ErrorBody).error.code).toBe('timeout');
  });

  it('413: a body over 16 MiB', async () => {
    const res = await post(router.base, '/v1/embeddings', { model: MODEL, input: 'x'.repeat(17 * 1024 * 1024) });
    expect(res.status).toBe(413);
  });
});

describe('the deployments watch', () => {
  it('follows replicas turning ready and deployments going away, without polling', async () => {
    await h.putDeployment('late', 'late/model', [sim.endpoint], { states: { [sim.endpoint]: 'Starting' } });
    await h.untilReplicas(router, 'late/model', 0);
    expect((await post(router.base, '/v1/chat/completions', chat('late/model', 'x'))).status).toBe(503);
    await h.putDeployment('late', 'late/model', [sim.endpoint]);
    await h.untilReplicas(router, 'late/model', 1);
    expect((await post(router.base, '/v1/chat/completions', chat('late/model', 'x'))).status).toBe(200);
    await h.deleteDeployment('late');
    await waitFor('late/model to go', () => (router.runtime.directory.pool('late/model') === undefined ? true : undefined));
    expect((await post(router.base, '/v1/chat/completions', chat('late/model', 'x'))).status).toBe(404);
  });
});

describe('operations', () => {
  it('serves /healthz, /readyz and /metrics on OPS_PORT, and probes on the API port', async () => {
    const ops = `http://127.0.0.1:${router.opsPort}`;
    expect((await fetch(`${ops}/healthz`)).status).toBe(200);
    const ready = await fetch(`${ops}/readyz`);
    expect(ready.status).toBe(200);
    expect(((await ready.json()) as { checks: Record<string, string> }).checks).toEqual({ nats: 'ok', store: 'ok' });
    const metrics = await (await fetch(`${ops}/metrics`)).text();
    expect(metrics).toContain(`gpufleet_router_replicas_ready{model="${MODEL}"`);
    expect(metrics).toMatch(/gpufleet_router_requests_total\{api="chat.completions",model="test\/model",code="200"/);
    expect((await fetch(`${router.base}/readyz`)).status).toBe(200);
  });
});

async function engineMetric(engine: EngineSim, name: string, filter: string): Promise<number> {
  const text = await (await fetch(`${engine.endpoint}/metrics`)).text();
  for (const line of text.split('\n')) if (line.startsWith(`${name}{`) && line.includes(filter)) return Number(line.slice(line.lastIndexOf(' ') + 1));
  return 0;
}
