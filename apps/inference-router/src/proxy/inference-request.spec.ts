import { ApiError } from '@gpufleet/openai-protocol';
import { promptText, readInferenceRequest } from './inference-request';

const body = (value: unknown) => Buffer.from(JSON.stringify(value));

describe('readInferenceRequest', () => {
  it('forwards the client’s bytes untouched unless a stream must ask for usage', () => {
    const plain = body({ model: 'm', messages: [{ role: 'user', content: 'hi' }], extra_vendor_field: 1 });
    expect(readInferenceRequest('chat.completions', plain).upstreamBody).toBe(plain);
    const withUsage = body({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } });
    const r1 = readInferenceRequest('chat.completions', withUsage);
    expect(r1.upstreamBody).toBe(withUsage);
    expect(r1.clientWantsUsage).toBe(true);

    const r2 = readInferenceRequest('chat.completions', body({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { continuous_usage_stats: true }, x: 1 }));
    expect(r2.clientWantsUsage).toBe(false);
    expect(JSON.parse(r2.upstreamBody.toString())).toEqual({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { continuous_usage_stats: true, include_usage: true },
      x: 1,
    });
  });

  it('adds the usage request to a stream without stream_options by splicing the client’s bytes', () => {
    const text = ' {\n "model": "m", "messages": [{"role": "user", "content": "{\\"stream_options\\": 1}"}], "stream": true }';
    const upstream = readInferenceRequest('chat.completions', Buffer.from(text)).upstreamBody.toString();
    expect(upstream.startsWith(' {"stream_options":{"include_usage":true},\n "model"')).toBe(true);
    expect(JSON.parse(upstream)).toEqual({ ...JSON.parse(text), stream_options: { include_usage: true } });
    const nulled = readInferenceRequest('chat.completions', body({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: null }));
    expect(JSON.parse(nulled.upstreamBody.toString()).stream_options).toEqual({ include_usage: true });
  });

  it('answers 400 naming the field', () => {
    const attempt = (api: 'chat.completions' | 'completions' | 'embeddings', text: string): ApiError => {
      try {
        readInferenceRequest(api, Buffer.from(text));
      } catch (err) {
        return err as ApiError;
      }
      throw new Error('accepted');
    };
    expect(attempt('chat.completions', '{"model":')).toMatchObject({ status: 400 });
    expect(attempt('chat.completions', '{"model":"m","messages":[{"role":"bot","content":"x"}]}')).toMatchObject({ status: 400, param: 'messages[0].role' });
    expect(attempt('completions', '{"model":"m"}')).toMatchObject({ status: 400, param: 'prompt' });
    expect(attempt('embeddings', '{"input":"x"}')).toMatchObject({ status: 400, param: 'model' });
  });

  it('gives the policy the prompt text: chat turns in order, or the first prompt', () => {
    const chat = readInferenceRequest('chat.completions', body({ model: 'm', messages: [{ role: 'system', content: 'S' }, { role: 'user', content: [{ type: 'text', text: 'U' }] }] }));
    expect(promptText(chat.parsed)).toBe('<|system|>S\n<|user|>U\n');
    expect(promptText(readInferenceRequest('completions', body({ model: 'm', prompt: ['a', 'b'] })).parsed)).toBe('a');
    expect(promptText(readInferenceRequest('embeddings', body({ model: 'm', input: [1, 2] })).parsed)).toBe('1 2');
  });
});
