import { ApiError } from './errors';
import { remoteDecodeRequestParams } from './builders';
import { parseChatCompletionRequest, parseCompletionRequest, parseEmbeddingRequest, parseJsonBody, parseKvTransferParams } from './validate';

function errorOf(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('expected an ApiError');
}

const chat = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  model: 'm',
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
});

describe('parseChatCompletionRequest', () => {
  it('accepts a minimal request and fills the defaults', () => {
    const request = parseChatCompletionRequest(chat());
    expect(request).toMatchObject({ model: 'm', n: 1, stream: false, stop: [], ignore_eos: false, min_tokens: 0, logprobs: false });
    expect(request.max_tokens).toBeUndefined();
    expect(request.messages).toEqual([{ role: 'user', content: 'hi' }]);
  });

  it('names the field, what was expected and what came for a bad role', () => {
    const error = errorOf(() =>
      parseChatCompletionRequest(chat({ messages: [{ role: 'system', content: 'a' }, { role: 'user', content: 'b' }, { role: 'bot', content: 'c' }] })),
    );
    expect(error.status).toBe(400);
    expect(error.param).toBe('messages[2].role');
    expect(error.message).toBe('messages[2].role: expected one of system, user, assistant, tool, developer, got "bot"');
  });

  it.each([
    [{ model: '' }, 'model', 'model: expected a non-empty string, got ""'],
    [{ model: 3 }, 'model', 'model: expected a non-empty string, got 3'],
    [{ messages: [] }, 'messages', 'messages: expected a non-empty array of messages, got []'],
    [{ messages: 'hi' }, 'messages', 'messages: expected a non-empty array of messages, got "hi"'],
    [{ messages: [{ role: 'user', content: 5 }] }, 'messages[0].content', 'messages[0].content: expected a string or an array of content parts, got 5'],
    [{ messages: [{ role: 'user', content: [{ type: 'audio' }] }] }, 'messages[0].content[0].type', 'messages[0].content[0].type: expected one of text, image_url, got "audio"'],
    [{ messages: [{ role: 'tool', content: 'r' }] }, 'messages[0].tool_call_id', 'messages[0].tool_call_id: expected a non-empty string, got nothing'],
    [{ temperature: 3 }, 'temperature', 'temperature: expected a number 0-2, got 3'],
    [{ temperature: 'hot' }, 'temperature', 'temperature: expected a number 0-2, got "hot"'],
    [{ max_tokens: 0 }, 'max_tokens', 'max_tokens: expected an integer >= 1, got 0'],
    [{ max_tokens: 1.5 }, 'max_tokens', 'max_tokens: expected an integer >= 1, got 1.5'],
    [{ n: 0 }, 'n', 'n: expected an integer 1-128, got 0'],
    [{ stream: 'yes' }, 'stream', 'stream: expected true or false, got "yes"'],
    [{ stream_options: { include_usage: true } }, 'stream_options', 'stream_options: only allowed when stream is true'],
    [{ stream: true, stream_options: { include_usage: 1 } }, 'stream_options.include_usage', 'stream_options.include_usage: expected true or false, got 1'],
    [{ stop: ['a', 7] }, 'stop[1]', 'stop[1]: expected a non-empty string, got 7'],
    [{ top_logprobs: 3 }, 'top_logprobs', 'top_logprobs: requires logprobs to be true'],
    [{ max_tokens: 4, min_tokens: 5 }, 'min_tokens', 'min_tokens: must not exceed max_tokens (4), got 5'],
    [{ top_p: 0 }, 'top_p', 'top_p: expected a number greater than 0 and at most 1, got 0'],
    [{ response_format: { type: 'yaml' } }, 'response_format.type', 'response_format.type: expected one of text, json_object, json_schema, structural_tag, got "yaml"'],
  ])('rejects %j with a message naming %s', (extra, param, message) => {
    const error = errorOf(() => parseChatCompletionRequest(chat(extra)));
    expect(error.param).toBe(param);
    expect(error.message).toBe(message);
  });

  it('takes max_completion_tokens over max_tokens and reads stream options', () => {
    const request = parseChatCompletionRequest(chat({ max_tokens: 10, max_completion_tokens: 5, stream: true, stream_options: { include_usage: true } }));
    expect(request.max_tokens).toBe(5);
    expect(request.stream_options).toEqual({ include_usage: true, continuous_usage_stats: false });
  });

  it('treats null as absent, as SDKs send unset fields', () => {
    const request = parseChatCompletionRequest(chat({ temperature: null, max_tokens: null, stop: null, stream_options: null, seed: null }));
    expect(request.temperature).toBeUndefined();
    expect(request.max_tokens).toBeUndefined();
    expect(request.stop).toEqual([]);
  });

  it('accepts content parts, an assistant turn with tool calls and null content, and a tool answer', () => {
    const request = parseChatCompletionRequest(
      chat({
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AA' } }] },
          { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get', arguments: '{}' } }] },
          { role: 'tool', content: '42', tool_call_id: 'c1' },
        ],
        tools: [{ type: 'function', function: { name: 'get' } }],
      }),
    );
    expect(request.messages[1].content).toBeNull();
    expect(request.messages[1].tool_calls?.[0].function.name).toBe('get');
    expect(request.messages[2].tool_call_id).toBe('c1');
    expect(request.tools).toHaveLength(1);
  });

  it('rejects a body that is not an object', () => {
    expect(errorOf(() => parseChatCompletionRequest([1])).message).toBe('request body: expected a JSON object, got an array of 1');
    expect(errorOf(() => parseChatCompletionRequest(null)).param).toBeNull();
  });
});

describe('parseCompletionRequest', () => {
  it('normalises every prompt form and defaults max_tokens to 16', () => {
    expect(parseCompletionRequest({ model: 'm', prompt: 'hi' }).prompts).toEqual([{ text: 'hi' }]);
    expect(parseCompletionRequest({ model: 'm', prompt: ['a', 'b'] }).prompts).toEqual([{ text: 'a' }, { text: 'b' }]);
    expect(parseCompletionRequest({ model: 'm', prompt: [1, 2, 3] }).prompts).toEqual([{ tokenIds: [1, 2, 3] }]);
    expect(parseCompletionRequest({ model: 'm', prompt: [[1], [2, 3]] }).prompts).toEqual([{ tokenIds: [1] }, { tokenIds: [2, 3] }]);
    expect(parseCompletionRequest({ model: 'm', prompt: 'hi' }).max_tokens).toBe(16);
  });

  it('points at the bad element of a prompt', () => {
    expect(errorOf(() => parseCompletionRequest({ model: 'm', prompt: [1, -2] })).message).toBe('prompt[1]: expected a token id (integer >= 0), got -2');
    expect(errorOf(() => parseCompletionRequest({ model: 'm', prompt: ['a', ''] })).param).toBe('prompt[1]');
    expect(errorOf(() => parseCompletionRequest({ model: 'm' })).message).toBe(
      'prompt: expected a string, an array of strings, an array of token ids or an array of token-id arrays, got nothing',
    );
    expect(errorOf(() => parseCompletionRequest({ model: 'm', prompt: 'x', logprobs: 9 })).message).toBe('logprobs: expected an integer 0-5, got 9');
  });
});

describe('parseEmbeddingRequest', () => {
  it('reads input, encoding and dimensions', () => {
    expect(parseEmbeddingRequest({ model: 'e', input: 'hello', dimensions: 8, encoding_format: 'base64' })).toEqual({
      model: 'e',
      inputs: [{ text: 'hello' }],
      encoding_format: 'base64',
      dimensions: 8,
      user: undefined,
    });
  });

  it('rejects an unknown encoding format', () => {
    const error = errorOf(() => parseEmbeddingRequest({ model: 'e', input: 'x', encoding_format: 'int8' }));
    expect(error.message).toBe('encoding_format: expected one of float, base64, got "int8"');
  });
});

describe('kv_transfer_params (disaggregated prefill/decode)', () => {
  // What vLLM's NixlConnector answers from a prefill engine (request_finished).
  const fromPrefill = {
    do_remote_prefill: true,
    do_remote_decode: false,
    remote_block_ids: [4, 9, 12],
    remote_engine_id: 'prefill-0',
    remote_request_id: 'chatcmpl-abc',
    remote_host: '10.0.0.7',
    remote_port: 5600,
    tp_size: 2,
  };

  it('reads the prefill request a proxy sends, and what the prefill engine answers, on chat and completions', () => {
    expect(parseChatCompletionRequest(chat({ kv_transfer_params: remoteDecodeRequestParams() })).kv_transfer_params).toEqual({
      do_remote_decode: true,
      do_remote_prefill: false,
      remote_engine_id: null,
      remote_block_ids: null,
      remote_host: null,
      remote_port: null,
    });
    expect(parseCompletionRequest({ model: 'm', prompt: 'x', kv_transfer_params: fromPrefill }).kv_transfer_params).toEqual(fromPrefill);
    expect(parseChatCompletionRequest(chat()).kv_transfer_params).toBeUndefined();
    expect(parseChatCompletionRequest(chat({ kv_transfer_params: null })).kv_transfer_params).toBeUndefined();
  });

  it.each([
    ['x', 'kv_transfer_params', 'kv_transfer_params: expected an object, got "x"'],
    [{ do_remote_decode: 'yes' }, 'kv_transfer_params.do_remote_decode', 'kv_transfer_params.do_remote_decode: expected true or false, got "yes"'],
    [
      { do_remote_decode: true, do_remote_prefill: true },
      'kv_transfer_params',
      'kv_transfer_params: do_remote_decode and do_remote_prefill cannot both be true: a request is either the prefill half or the decode half',
    ],
    [
      { ...fromPrefill, remote_block_ids: null },
      'kv_transfer_params.remote_block_ids',
      'kv_transfer_params.remote_block_ids: expected an array of block ids (integers >= 0) when do_remote_prefill is true, got null',
    ],
    [{ ...fromPrefill, remote_block_ids: [1, -2] }, 'kv_transfer_params.remote_block_ids[1]', 'kv_transfer_params.remote_block_ids[1]: expected a block id (integer >= 0), got -2'],
    [{ ...fromPrefill, remote_engine_id: '' }, 'kv_transfer_params.remote_engine_id', 'kv_transfer_params.remote_engine_id: expected a non-empty string when do_remote_prefill is true, got ""'],
    [{ ...fromPrefill, remote_host: undefined }, 'kv_transfer_params.remote_host', 'kv_transfer_params.remote_host: expected a non-empty string when do_remote_prefill is true, got nothing'],
    [{ ...fromPrefill, remote_port: 70000 }, 'kv_transfer_params.remote_port', 'kv_transfer_params.remote_port: expected an integer 1-65535, got 70000'],
    [{ ...fromPrefill, remote_port: null }, 'kv_transfer_params.remote_port', 'kv_transfer_params.remote_port: expected an integer 1-65535 when do_remote_prefill is true, got null'],
    [{ ...fromPrefill, remote_request_id: 7 }, 'kv_transfer_params.remote_request_id', 'kv_transfer_params.remote_request_id: expected a string, got 7'],
    [{ do_remote_decode: true, remote_port: 'p' }, 'kv_transfer_params.remote_port', 'kv_transfer_params.remote_port: expected an integer 1-65535, got "p"'],
  ])('rejects kv_transfer_params %j naming %s', (params, param, message) => {
    const error = errorOf(() => parseChatCompletionRequest(chat({ kv_transfer_params: params })));
    expect(error.status).toBe(400);
    expect(error.param).toBe(param);
    expect(error.message).toBe(message);
  });

  it('ignores fields it does not know and accepts neither half (no transfer)', () => {
    expect(parseKvTransferParams({ extra: 1 })).toEqual({
      do_remote_decode: false,
      do_remote_prefill: false,
      remote_engine_id: null,
      remote_block_ids: null,
      remote_host: null,
      remote_port: null,
    });
  });
});

describe('parseJsonBody', () => {
  it('says what is wrong with a body that is not JSON', () => {
    expect(errorOf(() => parseJsonBody('{"model":')).message).toMatch(/^request body: not valid JSON \(/);
    expect(errorOf(() => parseJsonBody('')).message).toBe('request body: expected a JSON object, got nothing');
    expect(parseJsonBody('{"a":1}')).toEqual({ a: 1 });
  });
});
