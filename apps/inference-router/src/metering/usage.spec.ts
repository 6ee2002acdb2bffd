import { parseChatCompletionRequest, parseCompletionRequest, parseEmbeddingRequest } from '@gpufleet/openai-protocol';
import { BodyTail, completionBudget, estimateCompletionTokens, estimatePromptTokens, lastUsageJson, usageFromObject, usageInJson } from './usage';

describe('usage', () => {
  it('reads OpenAI usage objects, cached tokens included', () => {
    expect(usageFromObject({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, prompt_tokens_details: { cached_tokens: 4 } })).toEqual({
      promptTokens: 10,
      cachedTokens: 4,
      completionTokens: 5,
    });
    expect(usageFromObject({ prompt_tokens: 7, total_tokens: 7, prompt_tokens_details: null })).toEqual({ promptTokens: 7, cachedTokens: 0, completionTokens: 0 });
    expect(usageFromObject(null)).toBeUndefined();
    expect(usageFromObject({ foo: 1 })).toBeUndefined();
  });

  it('finds the last usage member by matching braces, strings respected', () => {
    const body = '{"choices":[{"message":{"content":"the \\"usage\\": {x} is }"}}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5,"prompt_tokens_details":{"cached_tokens":1}}}';
    expect(lastUsageJson(body)).toBe('{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5,"prompt_tokens_details":{"cached_tokens":1}}');
    expect(usageInJson(body)).toEqual({ promptTokens: 3, cachedTokens: 1, completionTokens: 2 });
    expect(usageInJson('{"usage": null}')).toBeUndefined();
    expect(usageInJson('{"usage":{"prompt_tok')).toBeUndefined();
  });

  it('reads usage by scanning exactly as by parsing, whatever the shape', () => {
    const shapes = [
      '{"prompt_tokens":30,"total_tokens":46,"completion_tokens":16,"prompt_tokens_details":{"cached_tokens":12}}',
      '{"prompt_tokens": 30, "completion_tokens": 16, "total_tokens": 46, "prompt_tokens_details": null}',
      '{\n  "prompt_tokens": 7,\n  "total_tokens": 9\n}',
      '{"total_tokens":9}',
      '{"completion_tokens":4}',
      '{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8,"completion_tokens_details":{"reasoning_tokens":2},"prompt_tokens_details":{"audio_tokens":0}}',
      '{"prompt_tokens":5,"prompt_tokens_details":{"audio_tokens":0},"completion_tokens_details":{"cached_tokens":99},"completion_tokens":3}',
      '{"prompt_tokens":5,"prompt_tokens_details":{"cached_tokens":9}}',
      '{"prompt_tokens":5.5,"completion_tokens":2}',
      '{"prompt_tokens":null,"total_tokens":4,"completion_tokens":1}',
      '{"prompt_tokens":"5","completion_tokens":1}',
      '{"prompt_tokens":1e3,"completion_tokens":1}',
      '{"prompt_tokens":-3,"completion_tokens":1}',
      '{"prompt_tokens":4,"prompt_tokens_details":{"cached_tokens":null}}',
    ];
    for (const usage of shapes) {
      expect({ usage, read: usageInJson(`{"id":"x","usage":${usage}}`) }).toEqual({ usage, read: usageFromObject(JSON.parse(usage)) });
    }
  });

  it('keeps the tail of a large body and still finds its usage', () => {
    const tail = new BodyTail();
    const filler = Buffer.from(`{"data":[${'1.0,'.repeat(50_000)}1.0],`);
    for (let i = 0; i < filler.length; i += 1000) tail.push(filler.subarray(i, i + 1000));
    tail.push(Buffer.from('"usage":{"prompt_tokens":9,"total_tokens":9}}'));
    expect(tail.usage()).toEqual({ promptTokens: 9, cachedTokens: 0, completionTokens: 0 });
    expect(tail.wholeText()).toBeUndefined();
    expect(estimateCompletionTokens(tail)).toBe(Math.ceil(tail.bytes / 4));
  });

  it('estimates tokens when an engine reports none', () => {
    const chat = parseChatCompletionRequest({ model: 'm', messages: [{ role: 'user', content: 'Hello there, how are you?' }], max_tokens: 10, n: 2 });
    expect(estimatePromptTokens(chat)).toBeGreaterThan(7);
    expect(completionBudget(chat, 256)).toBe(20);
    const completion = parseCompletionRequest({ model: 'm', prompt: [[1, 2, 3], 'four five'] });
    expect(estimatePromptTokens(completion)).toBe(3 + 2);
    expect(completionBudget(completion, 256)).toBe(16 * 2);
    const embedding = parseEmbeddingRequest({ model: 'm', input: ['a b c'] });
    expect(completionBudget(embedding, 256)).toBe(0);
    const tail = new BodyTail();
    tail.push(Buffer.from('{"choices":[{"message":{"content":"one two three"}}]}'));
    expect(estimateCompletionTokens(tail)).toBe(3);
  });
});
