// The OpenAI-compatible API of the real engine-sim process, over HTTP.
import { parseSse } from '@gpufleet/openai-protocol';
import { EngineSimProcesses, metric, post, TEST_MODEL, type EngineSimProcess } from './__fixtures__/engine-sim.process';

interface ChatBody {
  id: string;
  object: string;
  model: string;
  created: number;
  choices: { index: number; message: { role: string; content: string }; finish_reason: string }[];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number; prompt_tokens_details: { cached_tokens: number } };
}

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: number };
}

const processes = new EngineSimProcesses();
let sim: EngineSimProcess;

beforeAll(async () => {
  // 1 ms of prefill per prompt token makes a cold long prompt slow and a cached one fast.
  sim = await processes.start([
    '--prefill-us-per-token', '1000',
    '--itl-ms', '1',
    '--max-model-len', '4096',
    '--embedding-dim', '32',
    '--served-model-name', TEST_MODEL, 'alias-model',
    '--seed', '7',
  ]);
});

afterAll(() => processes.stopAll());

const chat = (content: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  model: TEST_MODEL,
  messages: [{ role: 'user', content }],
  max_tokens: 8,
  ...extra,
});

describe('chat completions', () => {
  it('answers a non-streamed completion with usage, naming the replica', async () => {
    const res = await post(sim.base, '/v1/chat/completions', chat('Say something about caches.', { ignore_eos: true }));
    expect(res.status).toBe(200);
    expect(res.headers.get('x-gpufleet-replica')).toBe('sim-1');
    expect(res.headers.get('content-type')).toBe('application/json');
    const body = res.json as ChatBody;
    expect(body.id).toMatch(/^chatcmpl-[0-9a-f]{32}$/);
    expect(body.object).toBe('chat.completion');
    expect(body.model).toBe(TEST_MODEL);
    expect(body.choices).toHaveLength(1);
    expect(body.choices[0].message.role).toBe('assistant');
    expect(body.choices[0].message.content.length).toBeGreaterThan(0);
    expect(body.choices[0].finish_reason).toBe('length');
    expect(body.usage.completion_tokens).toBe(8);
    expect(body.usage.total_tokens).toBe(body.usage.prompt_tokens + 8);
    expect(body.usage.prompt_tokens_details.cached_tokens).toBeGreaterThanOrEqual(0);
  });

  it('answers the same prompt the same way (seeded), under a new id', async () => {
    const a = (await post(sim.base, '/v1/chat/completions', chat('Determinism please.'))).json as ChatBody;
    const b = (await post(sim.base, '/v1/chat/completions', chat('Determinism please.'))).json as ChatBody;
    expect(b.choices[0].message.content).toBe(a.choices[0].message.content);
    expect(b.id).not.toBe(a.id);
    const c = (await post(sim.base, '/v1/chat/completions', chat('Determinism please.', { seed: 99 }))).json as ChatBody;
    expect(c.choices[0].message.content).not.toBe(a.choices[0].message.content);
  });

  it('streams chunks, the usage chunk and [DONE] with stream_options.include_usage', async () => {
    const res = await post(sim.base, '/v1/chat/completions', chat('Stream to me.', { stream: true, stream_options: { include_usage: true }, ignore_eos: true, max_tokens: 6 }));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    expect(res.headers.get('x-gpufleet-replica')).toBe('sim-1');
    const events = parseSse(res.text);
    expect(events[events.length - 1]).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as { object: string; id: string; choices: { delta: { role?: string; content?: string }; finish_reason: string | null }[]; usage?: ChatBody['usage'] });
    expect(new Set(chunks.map((c) => c.object))).toEqual(new Set(['chat.completion.chunk']));
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
    const content = chunks.slice(1, -1);
    expect(content).toHaveLength(6);
    expect(content.slice(0, -1).every((c) => c.choices[0].finish_reason === null)).toBe(true);
    expect(content[5].choices[0].finish_reason).toBe('length');
    const usageChunk = chunks[chunks.length - 1];
    expect(usageChunk.choices).toEqual([]);
    expect(usageChunk.usage).toMatchObject({ completion_tokens: 6 });
    expect(content.map((c) => c.choices[0].delta.content).join('').length).toBeGreaterThan(0);
  });

  it('streams without a usage chunk when not asked for one', async () => {
    const res = await post(sim.base, '/v1/chat/completions', chat('Short stream.', { stream: true, max_tokens: 3 }));
    const events = parseSse(res.text);
    expect(events[events.length - 1]).toBe('[DONE]');
    for (const e of events.slice(0, -1)) expect((JSON.parse(e) as { usage?: unknown }).usage).toBeUndefined();
  });
});

describe('completions, embeddings, models', () => {
  it('completes several prompts with n choices each, echoing the prompt', async () => {
    const res = await post(sim.base, '/v1/completions', { model: TEST_MODEL, prompt: ['Once upon', 'In a cluster'], n: 2, max_tokens: 4, echo: true });
    expect(res.status).toBe(200);
    const body = res.json as { object: string; choices: { index: number; text: string }[]; usage: { completion_tokens: number } };
    expect(body.object).toBe('text_completion');
    expect(body.choices.map((c) => c.index)).toEqual([0, 1, 2, 3]);
    expect(body.choices[0].text.startsWith('Once upon')).toBe(true);
    expect(body.choices[3].text.startsWith('In a cluster')).toBe(true);
    expect(body.usage.completion_tokens).toBeLessThanOrEqual(16);
  });

  it('streams a text completion', async () => {
    const res = await post(sim.base, '/v1/completions', { model: 'alias-model', prompt: [101, 102, 103], max_tokens: 3, stream: true, ignore_eos: true });
    const events = parseSse(res.text);
    expect(events).toHaveLength(4);
    expect(events[3]).toBe('[DONE]');
    expect(JSON.parse(events[2]).choices[0].finish_reason).toBe('length');
  });

  it('embeds inputs as unit vectors, floats or base64', async () => {
    const res = await post(sim.base, '/v1/embeddings', { model: TEST_MODEL, input: ['hello world', 'hello there'], dimensions: 8 });
    expect(res.status).toBe(200);
    const body = res.json as { object: string; data: { index: number; embedding: number[] }[]; usage: { prompt_tokens: number } };
    expect(body.object).toBe('list');
    expect(body.data.map((d) => d.embedding.length)).toEqual([8, 8]);
    expect(body.usage.prompt_tokens).toBe(4);
    const full = (await post(sim.base, '/v1/embeddings', { model: TEST_MODEL, input: 'hello world', encoding_format: 'base64' })).json as { data: { embedding: string }[] };
    const bytes = Buffer.from(full.data[0].embedding, 'base64');
    expect(bytes.length).toBe(32 * 4);
    let norm = 0;
    for (let i = 0; i < 32; i++) norm += bytes.readFloatLE(i * 4) ** 2;
    expect(norm).toBeCloseTo(1, 4);
    const tooMany = await post(sim.base, '/v1/embeddings', { model: TEST_MODEL, input: 'x', dimensions: 64 });
    expect(tooMany.status).toBe(400);
    expect((tooMany.json as ErrorBody).error.param).toBe('dimensions');
  });

  it('lists the served model names', async () => {
    const res = await fetch(`${sim.base}/v1/models`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { object: string; data: { id: string; object: string; root: string; max_model_len: number }[] };
    expect(body.object).toBe('list');
    expect(body.data.map((m) => m.id)).toEqual([TEST_MODEL, 'alias-model']);
    expect(body.data[0]).toMatchObject({ object: 'model', root: TEST_MODEL, max_model_len: 4096 });
  });
});

describe('errors', () => {
  it('answers 400 naming the field, in vLLM’s error shape', async () => {
    const res = await post(sim.base, '/v1/chat/completions', { model: TEST_MODEL, messages: [{ role: 'user', content: 'a' }, { role: 'bot', content: 'b' }] });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({
      error: {
        message: 'messages[1].role: expected one of system, user, assistant, tool, developer, got "bot"',
        type: 'BadRequestError',
        param: 'messages[1].role',
        code: 400,
      },
    });
    expect(res.headers.get('x-gpufleet-replica')).toBe('sim-1');
  });

  it('answers 404 for an unknown model', async () => {
    const res = await post(sim.base, '/v1/chat/completions', chat('hi', { model: 'gpt-9' }));
    expect(res.status).toBe(404);
    expect((res.json as ErrorBody).error).toMatchObject({ type: 'NotFoundError', param: 'model', code: 404 });
    expect((res.json as ErrorBody).error.message).toContain('The model `gpt-9` does not exist.');
  });

  it('rejects bad JSON, the context overflow, wrong methods and unknown routes', async () => {
    const bad = await post(sim.base, '/v1/chat/completions', '{"model":');
    expect(bad.status).toBe(400);
    expect((bad.json as ErrorBody).error.message).toMatch(/^request body: not valid JSON/);
    const long = await post(sim.base, '/v1/chat/completions', chat('hi', { max_tokens: 5000 }));
    expect(long.status).toBe(400);
    expect((long.json as ErrorBody).error.message).toMatch(/maximum context length is 4096 tokens/);
    const get = await fetch(`${sim.base}/v1/chat/completions`);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect((await fetch(`${sim.base}/v2/nothing`)).status).toBe(404);
  });
});

describe('prefix cache', () => {
  it('serves a repeated long prompt from the cache: hits counted, cached tokens reported, TTFT lower', async () => {
    const longPrompt = Array.from({ length: 60 }, (_, i) => `Paragraph ${i} describes node ${i * 7} and its pool.`).join(' ');
    const request = chat(longPrompt, { max_tokens: 1 });
    const hitsBefore = await metric(sim.base, 'vllm:prefix_cache_hits_total');
    const queriesBefore = await metric(sim.base, 'vllm:prefix_cache_queries_total');

    let started = performance.now();
    const cold = (await post(sim.base, '/v1/chat/completions', request)).json as ChatBody;
    const coldMs = performance.now() - started;
    started = performance.now();
    const warm = (await post(sim.base, '/v1/chat/completions', request)).json as ChatBody;
    const warmMs = performance.now() - started;

    const promptTokens = cold.usage.prompt_tokens;
    expect(promptTokens).toBeGreaterThan(400);
    expect(cold.usage.prompt_tokens_details.cached_tokens).toBe(0);
    expect(warm.usage.prompt_tokens_details.cached_tokens).toBe(Math.floor((promptTokens - 1) / 16) * 16);
    // Cold: ~1 ms per prompt token of prefill; warm: under one block.
    expect(coldMs).toBeGreaterThan(promptTokens * 0.9);
    expect(warmMs).toBeLessThan(coldMs / 3);
    expect(await metric(sim.base, 'vllm:prefix_cache_hits_total')).toBe(hitsBefore + warm.usage.prompt_tokens_details.cached_tokens);
    expect(await metric(sim.base, 'vllm:prefix_cache_queries_total')).toBe(queriesBefore + 2 * promptTokens);
  });
});

describe('probes and metrics', () => {
  it('answers /healthz, /readyz, /health and /version', async () => {
    expect(await (await fetch(`${sim.base}/healthz`)).json()).toEqual({ status: 'ok' });
    expect(await (await fetch(`${sim.base}/readyz`)).json()).toEqual({ status: 'ready', checks: { model: 'ok', shutdown: 'ok' } });
    expect((await fetch(`${sim.base}/health`)).status).toBe(200);
    expect(await (await fetch(`${sim.base}/version`)).json()).toEqual({ version: expect.any(String) });
  });

  it('exposes vLLM’s metric names with the model_name label', async () => {
    const res = await fetch(`${sim.base}/metrics`);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const text = await res.text();
    for (const name of [
      'vllm:num_requests_running',
      'vllm:num_requests_waiting',
      'vllm:kv_cache_usage_perc',
      'vllm:prefix_cache_hits_total',
      'vllm:prefix_cache_queries_total',
      'vllm:prompt_tokens_total',
      'vllm:generation_tokens_total',
      'vllm:request_success_total',
      'vllm:time_to_first_token_seconds_bucket',
      'vllm:inter_token_latency_seconds_count',
      'vllm:e2e_request_latency_seconds_sum',
    ]) {
      expect(text).toMatch(new RegExp(`^${name}\\{[^}]*model_name="${TEST_MODEL.replace('/', '\\/')}"`, 'm'));
    }
    expect(await metric(sim.base, 'vllm:generation_tokens_total')).toBeGreaterThan(0);
    expect(await metric(sim.base, 'vllm:request_success_total', 'finished_reason="length"')).toBeGreaterThan(0);
    expect(text).toContain('gpufleet_engine_sim_info{replica="sim-1"');
    expect(text).toContain('process_cpu_user_seconds_total');
  });
});
