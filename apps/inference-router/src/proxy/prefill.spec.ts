import { decodeRequestBody, kvTransferParamsOf, prefillRequestBody } from './prefill';

const parse = (body: Buffer): Record<string, unknown> => JSON.parse(body.toString('utf8')) as Record<string, unknown>;

describe('prefillRequestBody', () => {
  it('makes a streamed chat request a non-streamed one-token prefill for a remote decode, as vLLM’s proxy does', () => {
    const client = {
      model: 'llama',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 100,
      max_completion_tokens: 50,
      min_tokens: 10,
      temperature: 0.2,
      kv_transfer_params: { do_remote_prefill: true },
    };
    expect(parse(prefillRequestBody(client))).toEqual({
      model: 'llama',
      messages: [{ role: 'user', content: 'hi' }],
      stream: false,
      max_tokens: 1,
      max_completion_tokens: 1,
      temperature: 0.2,
      kv_transfer_params: { do_remote_decode: true, do_remote_prefill: false, remote_engine_id: null, remote_block_ids: null, remote_host: null, remote_port: null },
    });
    // The client's object is left as it was.
    expect(client.stream).toBe(true);
    expect(client.min_tokens).toBe(10);
  });

  it('adds no max_completion_tokens the client did not send', () => {
    expect(parse(prefillRequestBody({ model: 'm', prompt: 'x' }))).toEqual({
      model: 'm',
      prompt: 'x',
      stream: false,
      max_tokens: 1,
      kv_transfer_params: expect.objectContaining({ do_remote_decode: true }),
    });
  });
});

describe('decodeRequestBody', () => {
  it('is the client’s request with the prefill engine’s kv_transfer_params', () => {
    const params = { do_remote_prefill: true, do_remote_decode: false, remote_block_ids: [1, 2], remote_engine_id: 'p0', remote_host: 'h', remote_port: 5600 };
    expect(parse(decodeRequestBody({ model: 'm', prompt: 'x', stream: true, min_tokens: 3 }, params))).toEqual({
      model: 'm',
      prompt: 'x',
      stream: true,
      min_tokens: 3,
      kv_transfer_params: params,
    });
  });
});

describe('kvTransferParamsOf', () => {
  it('takes kv_transfer_params from a prefill answer, or says why there are none', () => {
    expect(kvTransferParamsOf('{"id":"x","kv_transfer_params":{"do_remote_prefill":true}}')).toEqual({ do_remote_prefill: true });
    expect(kvTransferParamsOf('{"id":"x","kv_transfer_params":null}')).toMatch(/^answered without kv_transfer_params: the engine must run with a KV connector/);
    expect(kvTransferParamsOf('{"id":"x"}')).toContain('NixlConnector');
    expect(kvTransferParamsOf('not json')).toBe('answered a body that is not JSON');
  });
});
