import { parseRateLimitReply, rateLimitCheckCall, rateLimitKeys, rateLimitSettleCall } from './rate-limit';
import { RATE_LIMIT_CHECK_SCRIPT, RATE_LIMIT_CHECK_SHA1, RATE_LIMIT_SETTLE_SHA1 } from './scripts';
import { createHash } from 'crypto';
import { RedisKeys } from '@gpufleet/contracts';

const PREFIX = RedisKeys.rateLimitPrefix('dev');

describe('rate limit keys and arguments', () => {
  it('puts both counters of a key and model in one cluster slot, encoding the parts', () => {
    expect(rateLimitKeys('abcdefghijkl', 'meta-llama/Llama-3-8B', PREFIX)).toEqual({
      requests: 'gpufleet:dev:ratelimit:{abcdefghijkl:meta-llama%2FLlama-3-8B}:requests',
      tokens: 'gpufleet:dev:ratelimit:{abcdefghijkl:meta-llama%2FLlama-3-8B}:tokens',
    });
    // A model name cannot close the hash tag or fake another key's.
    expect(rateLimitKeys('k', 'a}:x{b', 'gpufleet:dev:rl').tokens).toBe('gpufleet:dev:rl:{k:a%7D%3Ax%7Bb}:tokens');
    expect(() => rateLimitKeys('k', 'm', 'bad{prefix')).toThrow('rateLimit.prefix: expected a key prefix without { or }, got "bad{prefix"');
  });

  it('builds the check call with 0 for an unlimited dimension and the server clock by default', () => {
    const call = rateLimitCheckCall({ keyId: 'k', model: 'm', prefix: PREFIX, limits: { tokensPerMinute: 10_000 }, tokens: 300 });
    expect(call).toEqual({
      script: RATE_LIMIT_CHECK_SCRIPT,
      sha1: RATE_LIMIT_CHECK_SHA1,
      keys: ['gpufleet:dev:ratelimit:{k:m}:requests', 'gpufleet:dev:ratelimit:{k:m}:tokens'],
      args: ['0', '10000', '300', '60000', ''],
    });
    expect(call?.sha1).toBe(createHash('sha1').update(RATE_LIMIT_CHECK_SCRIPT).digest('hex'));
    expect(rateLimitCheckCall({ keyId: 'k', model: 'm', prefix: PREFIX, limits: { requestsPerMinute: 5 }, tokens: 0, nowMs: 1.5 })?.args).toEqual([
      '5',
      '0',
      '0',
      '60000',
      '1.500',
    ]);
  });

  it('skips Redis for a key without limits', () => {
    expect(rateLimitCheckCall({ keyId: 'k', model: 'm', prefix: PREFIX, limits: undefined, tokens: 10 })).toBeUndefined();
    expect(rateLimitCheckCall({ keyId: 'k', model: 'm', prefix: PREFIX, limits: {}, tokens: 10 })).toBeUndefined();
  });

  it('rejects nonsense limits and token counts, naming the field', () => {
    expect(() => rateLimitCheckCall({ keyId: 'k', model: 'm', prefix: PREFIX, limits: { requestsPerMinute: 0 }, tokens: 1 })).toThrow(
      'limits.requestsPerMinute: expected an integer ≥ 1, got 0',
    );
    expect(() => rateLimitCheckCall({ keyId: 'k', model: 'm', prefix: PREFIX, limits: { tokensPerMinute: 1.5 }, tokens: 1 })).toThrow(
      'limits.tokensPerMinute: expected an integer ≥ 1, got 1.5',
    );
    expect(() => rateLimitCheckCall({ keyId: 'k', model: 'm', prefix: PREFIX, limits: { requestsPerMinute: 1 }, tokens: -1 })).toThrow(
      'tokens: expected an integer ≥ 0, got -1',
    );
  });

  it('settles only when the key has a token limit and usage differs from the reservation', () => {
    const limits = { tokensPerMinute: 1000 };
    expect(rateLimitSettleCall({ keyId: 'k', model: 'm', prefix: PREFIX, limits, reservedTokens: 500, usedTokens: 120 })).toEqual({
      script: expect.any(String),
      sha1: RATE_LIMIT_SETTLE_SHA1,
      keys: ['gpufleet:dev:ratelimit:{k:m}:tokens'],
      args: ['1000', '-380', '60000', ''],
    });
    expect(rateLimitSettleCall({ keyId: 'k', model: 'm', prefix: PREFIX, limits, reservedTokens: 500, usedTokens: 500 })).toBeUndefined();
    expect(rateLimitSettleCall({ keyId: 'k', model: 'm', prefix: PREFIX, limits: { requestsPerMinute: 3 }, reservedTokens: 5, usedTokens: 1 })).toBeUndefined();
  });

  it('reads the script replies', () => {
    expect(parseRateLimitReply([1, 0, '', 9, -1, 6000, -1])).toEqual({ allowed: true, requests: { remaining: 9, resetMs: 6000 } });
    expect(parseRateLimitReply([0, 1200, 'tokens', 3, 10, 6000, 59000])).toEqual({
      allowed: false,
      reason: 'rate_limited',
      limitedBy: 'tokens',
      retryAfterMs: 1200,
      requests: { remaining: 3, resetMs: 6000 },
      tokens: { remaining: 10, resetMs: 59000 },
    });
    expect(parseRateLimitReply([0, -1, 'tokens', -1, 1000, -1, 0])).toEqual({
      allowed: false,
      reason: 'exceeds_limit',
      limitedBy: 'tokens',
      retryAfterMs: 0,
      tokens: { remaining: 1000, resetMs: 0 },
    });
    expect(() => parseRateLimitReply('OK')).toThrow('rate limit script replied "OK", expected an array of 7');
    expect(() => parseRateLimitReply([0, 5, 'bogus', 0, 0, 0, 0])).toThrow('rate limit script replied');
  });
});
