// Disaggregated prefill/decode between two real engine-sim processes, over HTTP, with vLLM's
// NixlConnector protocol of kv_transfer_params: a prefill engine computes the prompt and
// answers where its KV is; a decode engine given that answer pulls the KV instead of computing it.
import { parseSse, remoteDecodeRequestParams } from '@gpufleet/openai-protocol';
import { EngineSimProcesses, metric, post, TEST_MODEL, type EngineSimProcess } from './__fixtures__/engine-sim.process';

interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

interface Answer {
  id: string;
  choices: { finish_reason: string; message?: { content: string }; text?: string }[];
  usage: Usage;
  kv_transfer_params?: Record<string, unknown> | null;
}

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: number };
}

const BLOCK = 16;
const processes = new EngineSimProcesses();
let prefill: EngineSimProcess;
let decode: EngineSimProcess;

beforeAll(async () => {
  // 1 ms per prompt token of prefill, 0.2 ms per KV block pulled: a pulled prompt is ~80× faster.
  const timing = ['--prefill-us-per-token', '1000', '--itl-ms', '1', '--kv-transfer-us-per-block', '200', '--block-size', String(BLOCK)];
  [prefill, decode] = await Promise.all([processes.start(timing), processes.start(timing)]);
});

afterAll(() => processes.stopAll());

let promptCount = 0;
/** A prompt of a few hundred tokens no engine has seen yet. */
function freshPrompt(): string {
  const n = ++promptCount;
  return Array.from({ length: 40 }, (_, i) => `Topic ${n} paragraph ${i} covers replica ${i * 13 + n} and its queue.`).join(' ');
}

const chat = (content: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  model: TEST_MODEL,
  messages: [{ role: 'user', content }],
  max_tokens: 8,
  ...extra,
});

/** The prefill half, as a proxy sends it; returns the prefill engine's answer. */
async function prefillHalf(path: string, body: Record<string, unknown>): Promise<Answer> {
  const res = await post(prefill.base, path, { ...body, max_tokens: 1, stream: false, kv_transfer_params: remoteDecodeRequestParams() });
  expect(res.status).toBe(200);
  return res.json as Answer;
}

describe('the prefill half (kv_transfer_params.do_remote_decode)', () => {
  it('prefills the prompt, answers one token and where its KV blocks are, and keeps them in its prefix cache', async () => {
    const offeredBefore = await metric(prefill.base, 'gpufleet_engine_sim_kv_transfer_blocks_total', 'role="prefill"');
    const request = chat(freshPrompt());
    const answer = await prefillHalf('/v1/chat/completions', request);
    const promptTokens = answer.usage.prompt_tokens;
    expect(promptTokens).toBeGreaterThan(300);
    expect(answer.usage.completion_tokens).toBe(1);
    expect(answer.usage.prompt_tokens_details.cached_tokens).toBe(0);
    const blocks = Math.ceil(promptTokens / BLOCK);
    expect(answer.kv_transfer_params).toEqual({
      do_remote_prefill: true,
      do_remote_decode: false,
      remote_block_ids: expect.any(Array),
      remote_engine_id: 'sim-1',
      remote_request_id: answer.id,
      remote_host: '127.0.0.1',
      remote_port: Number(new URL(prefill.base).port),
      tp_size: 1,
    });
    const ids = answer.kv_transfer_params?.remote_block_ids as number[];
    expect(ids).toHaveLength(blocks);
    expect(ids.every((id) => Number.isSafeInteger(id) && id >= 0)).toBe(true);
    expect(await metric(prefill.base, 'gpufleet_engine_sim_kv_transfer_blocks_total', 'role="prefill"')).toBe(offeredBefore + blocks);
    // Its full blocks are in the prefill engine's prefix cache now.
    const again = (await post(prefill.base, '/v1/chat/completions', { ...request, max_tokens: 1 })).json as Answer;
    expect(again.usage.prompt_tokens_details.cached_tokens).toBe(Math.floor((promptTokens - 1) / BLOCK) * BLOCK);
    expect(again.kv_transfer_params).toBeUndefined();
  });
});

describe('the decode half (kv_transfer_params.do_remote_prefill)', () => {
  it('pulls the prompt’s KV instead of computing it, reports it cached and counts the external hits', async () => {
    const request = chat(freshPrompt(), { ignore_eos: true });
    const params = (await prefillHalf('/v1/chat/completions', request)).kv_transfer_params;
    const [queries, hits, pulled] = await Promise.all([
      metric(decode.base, 'vllm:external_prefix_cache_queries_total'),
      metric(decode.base, 'vllm:external_prefix_cache_hits_total'),
      metric(decode.base, 'gpufleet_engine_sim_kv_transfer_blocks_total', 'role="decode"'),
    ]);
    const started = performance.now();
    const res = await post(decode.base, '/v1/chat/completions', { ...request, kv_transfer_params: params });
    const elapsed = performance.now() - started;
    expect(res.status).toBe(200);
    const answer = res.json as Answer;
    const promptTokens = answer.usage.prompt_tokens;
    expect(answer.usage.completion_tokens).toBe(8);
    // Every prompt token but the last (computed here, as vLLM does) came from the prefill engine.
    expect(answer.usage.prompt_tokens_details.cached_tokens).toBe(promptTokens - 1);
    expect(answer.kv_transfer_params).toBeUndefined();
    // A cold prefill here would take ~promptTokens ms; the pull takes ~blocks × 0.2 ms.
    expect(elapsed).toBeLessThan(promptTokens / 3);
    expect(await metric(decode.base, 'vllm:external_prefix_cache_queries_total')).toBe(queries + promptTokens);
    expect(await metric(decode.base, 'vllm:external_prefix_cache_hits_total')).toBe(hits + promptTokens - 1);
    expect(await metric(decode.base, 'gpufleet_engine_sim_kv_transfer_blocks_total', 'role="decode"')).toBe(pulled + Math.ceil(promptTokens / BLOCK));
    expect(await metric(decode.base, 'vllm:request_prefill_time_seconds_count')).toBeGreaterThan(0);
  });

  it('streams a decode the same way, with the pulled tokens in the usage chunk', async () => {
    const request = chat(freshPrompt(), { ignore_eos: true });
    const params = (await prefillHalf('/v1/chat/completions', request)).kv_transfer_params;
    const res = await post(decode.base, '/v1/chat/completions', { ...request, stream: true, stream_options: { include_usage: true }, kv_transfer_params: params });
    expect(res.status).toBe(200);
    const events = parseSse(res.text);
    expect(events[events.length - 1]).toBe('[DONE]');
    const last = JSON.parse(events[events.length - 2]) as { choices: unknown[]; usage: Usage };
    expect(last.choices).toEqual([]);
    expect(last.usage.completion_tokens).toBe(8);
    expect(last.usage.prompt_tokens_details.cached_tokens).toBe(last.usage.prompt_tokens - 1);
  });

  it('does both halves for text completions', async () => {
    const request = { model: TEST_MODEL, prompt: freshPrompt(), max_tokens: 4, ignore_eos: true };
    const params = (await prefillHalf('/v1/completions', request)).kv_transfer_params;
    expect(params).toMatchObject({ do_remote_prefill: true, remote_engine_id: 'sim-1' });
    const answer = (await post(decode.base, '/v1/completions', { ...request, kv_transfer_params: params })).json as Answer;
    expect(answer.usage.completion_tokens).toBe(4);
    expect(answer.usage.prompt_tokens_details.cached_tokens).toBe(answer.usage.prompt_tokens - 1);
  });

  it('pulls only the blocks the prefilled prompt shares with its own', async () => {
    const params = (await prefillHalf('/v1/chat/completions', chat(freshPrompt()))).kv_transfer_params;
    const other = (await post(decode.base, '/v1/chat/completions', chat(freshPrompt(), { max_tokens: 1, kv_transfer_params: params }))).json as Answer;
    // Both prompts begin with the same chat template tokens and "Topic": under one block.
    expect(other.usage.prompt_tokens_details.cached_tokens).toBe(0);
  });
});

describe('validation of kv_transfer_params', () => {
  const expectError = async (body: Record<string, unknown>, param: string, message: string | RegExp): Promise<void> => {
    const res = await post(decode.base, body.prompt === undefined ? '/v1/chat/completions' : '/v1/completions', body);
    expect(res.status).toBe(400);
    const error = (res.json as ErrorBody).error;
    expect(error.param).toBe(param);
    expect(error.message).toMatch(message);
  };

  it('answers precise 400s', async () => {
    await expectError(chat('x', { kv_transfer_params: [] }), 'kv_transfer_params', 'kv_transfer_params: expected an object, got []');
    await expectError(
      chat('x', { kv_transfer_params: { do_remote_prefill: true, remote_engine_id: 'p', remote_host: 'h', remote_port: 1 } }),
      'kv_transfer_params.remote_block_ids',
      'kv_transfer_params.remote_block_ids: expected an array of block ids (integers >= 0) when do_remote_prefill is true, got nothing',
    );
    await expectError(chat('x', { kv_transfer_params: { do_remote_decode: true, do_remote_prefill: true } }), 'kv_transfer_params', /cannot both be true/);
    await expectError(
      chat('x', { stream: true, kv_transfer_params: remoteDecodeRequestParams() }),
      'stream',
      'stream: must be false with kv_transfer_params.do_remote_decode: the prefill engine answers the KV transfer parameters in its response body',
    );
    await expectError({ model: TEST_MODEL, prompt: ['a', 'b'], kv_transfer_params: remoteDecodeRequestParams() }, 'prompt', 'prompt: kv_transfer_params take a single prompt, got 2');
  });
});
