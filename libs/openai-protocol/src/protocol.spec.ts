import {
  chatCompletion,
  chatCompletionChunk,
  chatContentDelta,
  chatRoleDelta,
  chatUsageChunk,
  completion,
  completionChoice,
  embeddingList,
  embeddingToBase64,
  responseId,
  usage,
} from './builders';
import { chatPromptTokenIds } from './chat-template';
import { ApiError, contextLengthExceeded, errorBody, invalidField, modelNotFound } from './errors';
import { parseSse, SSE_DONE, sseEvent, SseParser, StreamChunkEncoder } from './sse';
import { countTokens, encode, FIRST_ORDINARY_ID, SPECIAL_TOKENS, tokenize, VOCAB_SIZE } from './tokenizer';

describe('tokenizer', () => {
  it('splits text into pieces that join back to the text', () => {
    const text = 'Hello, world!  The internationalisation of 2024 costs $1,000.\n\tNew line…';
    expect(tokenize(text).join('')).toBe(text);
    expect(countTokens(text)).toBe(tokenize(text).length);
    expect(encode(text)).toHaveLength(tokenize(text).length);
  });

  it('attaches one leading space to a word and cuts long words every six letters', () => {
    expect(tokenize('hello world')).toEqual(['hello', ' world']);
    expect(tokenize(' internationalisation')).toEqual([' intern', 'ationa', 'lisati', 'on']);
    expect(tokenize('12345')).toEqual(['123', '45']);
    expect(tokenize('a  b')).toEqual(['a', ' ', ' b']);
  });

  it('maps a piece to the same ordinary id everywhere', () => {
    const ids = encode('the cache the cache');
    expect(ids[0]).not.toBe(ids[1]);
    expect(ids[1]).toBe(ids[3]);
    for (const id of ids) {
      expect(id).toBeGreaterThanOrEqual(FIRST_ORDINARY_ID);
      expect(id).toBeLessThan(VOCAB_SIZE);
    }
  });

  it('renders chats so that a shared conversation start is a shared token prefix', () => {
    const system = { role: 'system' as const, content: 'You are terse.' };
    const a = chatPromptTokenIds([system, { role: 'user', content: 'first question' }]);
    const b = chatPromptTokenIds([system, { role: 'user', content: 'another one' }]);
    const common = chatPromptTokenIds([system]).length - 3; // less the generation cue
    expect(a.slice(0, common)).toEqual(b.slice(0, common));
    expect(a[0]).toBe(SPECIAL_TOKENS.IM_START);
    expect(a.filter((id) => id === SPECIAL_TOKENS.IM_END)).toHaveLength(2);
  });
});

describe('error bodies', () => {
  const error = invalidField('messages[0].role', 'expected one of system, user, got "bot"');

  it('renders the OpenAI, vLLM and legacy vLLM shapes', () => {
    expect(errorBody(error, 'openai')).toEqual({
      error: { message: error.message, type: 'invalid_request_error', param: 'messages[0].role', code: null },
    });
    expect(errorBody(error, 'vllm')).toEqual({ error: { message: error.message, type: 'BadRequestError', param: 'messages[0].role', code: 400 } });
    expect(errorBody(error, 'vllm-legacy')).toEqual({ object: 'error', message: error.message, type: 'BadRequestError', param: 'messages[0].role', code: 400 });
  });

  it('gives unknown models a 404 that lists the served ones', () => {
    const notFound = modelNotFound('gpt-9', ['a', 'b']);
    expect(notFound).toBeInstanceOf(ApiError);
    expect(notFound.status).toBe(404);
    expect(notFound.message).toBe('The model `gpt-9` does not exist. Available models: a, b.');
    expect(errorBody(notFound, 'openai')).toMatchObject({ error: { code: 'model_not_found', param: 'model' } });
  });

  it('explains a context overflow with both token counts', () => {
    expect(contextLengthExceeded(100, 90, 20, 'messages').message).toBe(
      "This model's maximum context length is 100 tokens. However, you requested 110 tokens (90 in the messages, 20 in the completion). " +
        'Please reduce the length of the messages or completion.',
    );
  });
});

describe('builders', () => {
  const head = { id: 'chatcmpl-1', created: 1700000000, model: 'm' };

  it('builds a chat completion with usage and cached tokens', () => {
    const body = chatCompletion(head, [{ text: 'Hi.', finishReason: 'stop', stopReason: null }], usage(10, 2, 8));
    expect(body).toEqual({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 1700000000,
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hi.', refusal: null, tool_calls: [] }, logprobs: null, finish_reason: 'stop', stop_reason: null }],
      usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12, prompt_tokens_details: { cached_tokens: 8 } },
      system_fingerprint: null,
      prompt_logprobs: null,
    });
  });

  it('builds the usage chunk with no choices', () => {
    expect(chatUsageChunk(head, usage(1, 2))).toEqual({
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 1700000000,
      model: 'm',
      choices: [],
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, prompt_tokens_details: null },
    });
  });

  it('names responses like vLLM, uniquely', () => {
    const ids = new Set(Array.from({ length: 1000 }, () => responseId('chatcmpl')));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(id).toMatch(/^chatcmpl-[0-9a-f]{32}$/);
  });

  it('encodes embeddings as little-endian float32 in base64', () => {
    const b64 = embeddingToBase64([1, -0.5]);
    const bytes = Buffer.from(b64, 'base64');
    expect([bytes.readFloatLE(0), bytes.readFloatLE(4)]).toEqual([1, -0.5]);
    const list = embeddingList({ id: 'embd-1', created: 1, model: 'e' }, [[0.6, 0.8]], 3, 'float');
    expect(list.data[0]).toEqual({ index: 0, object: 'embedding', embedding: [0.6, 0.8] });
    expect(list.usage).toEqual({ prompt_tokens: 3, total_tokens: 3, completion_tokens: 0, prompt_tokens_details: null });
  });
});

describe('server-sent events', () => {
  const head = { id: 'chatcmpl-"q"', created: 1700000000, model: 'org/model' };

  it('fast-encodes exactly what the builders serialise', () => {
    const encoder = new StreamChunkEncoder(head, 'chat.completion.chunk');
    expect(encoder.chatRole(2)).toBe(sseEvent(chatCompletionChunk(head, [chatRoleDelta(2)])));
    expect(encoder.chatContent(0, ' "x"\n', null)).toBe(sseEvent(chatCompletionChunk(head, [chatContentDelta(0, ' "x"\n')])));
    const finish = { finishReason: 'stop' as const, stopReason: 'END' };
    expect(encoder.chatContent(1, '.', finish)).toBe(sseEvent(chatCompletionChunk(head, [chatContentDelta(1, '.', finish)])));
    const text = new StreamChunkEncoder(head, 'text_completion');
    expect(text.completionText(0, 'a', null)).toBe(sseEvent(completion(head, [completionChoice(0, 'a', null)])));
    expect(text.completionText(3, 'b', { finishReason: 'length', stopReason: null })).toBe(
      sseEvent(completion(head, [completionChoice(3, 'b', { finishReason: 'length', stopReason: null })])),
    );
  });

  it('parses a stream fed in arbitrary pieces, with CRLF, comments and multi-line data', () => {
    const stream = `: keep-alive\r\ndata: {"a":1}\r\n\r\nevent: x\ndata: line1\ndata: line2\n\n${SSE_DONE}`;
    const parser = new SseParser();
    const events: string[] = [];
    for (let i = 0; i < stream.length; i += 3) events.push(...parser.push(stream.slice(i, i + 3)));
    events.push(...parser.end());
    expect(events).toEqual(['{"a":1}', 'line1\nline2', '[DONE]']);
    expect(parseSse('data: tail-without-blank-line')).toEqual(['tail-without-blank-line']);
  });
});
