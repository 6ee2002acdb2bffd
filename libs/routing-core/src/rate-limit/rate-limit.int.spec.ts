import Redis from 'ioredis';
import { RedisKeys } from '@gpufleet/contracts';
import { RunningServer, startRedis } from '@gpufleet/testing';
import {
  parseRateLimitReply,
  RateLimitCheck,
  RateLimitResult,
  rateLimitCheckCall,
  rateLimitKeys,
  rateLimitSettleCall,
  RedisScriptCall,
  TokenSettlement,
} from './rate-limit';
import { RATE_LIMIT_CHECK_SCRIPT, RATE_LIMIT_CHECK_SHA1 } from './scripts';

const PREFIX = RedisKeys.rateLimitPrefix('test');

const T0 = Date.parse('2026-01-15T12:00:00Z');

describe('rate limit scripts against redis-server', () => {
  let server: RunningServer;
  let redis: Redis;
  let keyN = 0;

  beforeAll(async () => {
    server = await startRedis();
    redis = new Redis(server.url, { disableClientInfo: true });
  });

  afterAll(async () => {
    redis.disconnect();
    await server.dispose();
  });

  /** A fresh API key id per test, so tests share the server but no counters. */
  function keyId(): string {
    keyN++;
    return `key${String(keyN).padStart(9, '0')}`;
  }

  async function run(call: RedisScriptCall | undefined, client: Redis = redis): Promise<unknown> {
    if (call === undefined) throw new Error('expected a script call');
    return client.eval(call.script, call.keys.length, ...call.keys, ...call.args);
  }

  async function check(c: Omit<RateLimitCheck, 'prefix'>, client?: Redis): Promise<RateLimitResult> {
    return parseRateLimitReply(await run(rateLimitCheckCall({ ...c, prefix: PREFIX }), client));
  }

  async function settle(s: Omit<TokenSettlement, 'prefix'>): Promise<unknown> {
    return run(rateLimitSettleCall({ ...s, prefix: PREFIX }));
  }

  it('allows a minute’s requests at once, then one more every 60/limit seconds', async () => {
    const base = { keyId: keyId(), model: 'llama', limits: { requestsPerMinute: 5 }, tokens: 0 };
    const results: RateLimitResult[] = [];
    for (let i = 0; i < 5; i++) results.push(await check({ ...base, nowMs: T0 }));
    expect(results.map((r) => r.allowed)).toEqual([true, true, true, true, true]);
    expect(results[4]).toEqual({ allowed: true, requests: { remaining: 0, resetMs: 60_000 } });
    expect(await check({ ...base, nowMs: T0 })).toEqual({
      allowed: false,
      reason: 'rate_limited',
      limitedBy: 'requests',
      retryAfterMs: 12_000,
      requests: { remaining: 0, resetMs: 60_000 },
    });
    expect((await check({ ...base, nowMs: T0 + 11_999 })).allowed).toBe(false);
    expect(await check({ ...base, nowMs: T0 + 12_000 })).toEqual({ allowed: true, requests: { remaining: 0, resetMs: 60_000 } });
    expect((await check({ ...base, nowMs: T0 + 72_000 + 60_000 })).allowed).toBe(true);
  });

  it('reserves requests and tokens together or not at all', async () => {
    const base = { keyId: keyId(), model: 'llama', limits: { requestsPerMinute: 10, tokensPerMinute: 1_000 }, nowMs: T0 };
    expect(await check({ ...base, tokens: 600 })).toEqual({
      allowed: true,
      requests: { remaining: 9, resetMs: 6_000 },
      tokens: { remaining: 400, resetMs: 36_000 },
    });
    // 200 tokens short: 200 × 60 ms to wait; the request is not counted.
    expect(await check({ ...base, tokens: 600 })).toMatchObject({ allowed: false, limitedBy: 'tokens', retryAfterMs: 12_000 });
    expect(await check({ ...base, tokens: 100 })).toMatchObject({ allowed: true, requests: { remaining: 8 }, tokens: { remaining: 300 } });
  });

  it('says when a request alone needs more tokens than a minute allows', async () => {
    const base = { keyId: keyId(), model: 'llama', limits: { tokensPerMinute: 1_000 }, nowMs: T0 };
    expect(await check({ ...base, tokens: 1_001 })).toMatchObject({ allowed: false, reason: 'exceeds_limit', limitedBy: 'tokens', retryAfterMs: 0 });
    expect(await check({ ...base, tokens: 1_000 })).toMatchObject({ allowed: true, tokens: { remaining: 0 } });
  });

  it('counts each model of a key apart', async () => {
    const id = keyId();
    const limits = { requestsPerMinute: 1 };
    expect((await check({ keyId: id, model: 'a', limits, tokens: 0, nowMs: T0 })).allowed).toBe(true);
    expect((await check({ keyId: id, model: 'b', limits, tokens: 0, nowMs: T0 })).allowed).toBe(true);
    expect((await check({ keyId: id, model: 'a', limits, tokens: 0, nowMs: T0 })).allowed).toBe(false);
  });

  it('refunds unused reserved tokens, never beyond a full bucket, and charges overuse', async () => {
    const id = keyId();
    const limits = { tokensPerMinute: 1_000 };
    const base = { keyId: id, model: 'llama', limits, nowMs: T0 };
    await check({ ...base, tokens: 800 });
    expect(await settle({ ...base, reservedTokens: 800, usedTokens: 200 })).toBe(12_000); // 200 tokens in use
    expect(await check({ ...base, tokens: 800 })).toMatchObject({ allowed: true, tokens: { remaining: 0 } });
    // Refund everything and more: the bucket is full, not fuller.
    await settle({ ...base, reservedTokens: 5_000, usedTokens: 0 });
    expect(await redis.exists(rateLimitKeys(id, 'llama', PREFIX).tokens)).toBe(0);
    expect(await check({ ...base, tokens: 1_000 })).toMatchObject({ allowed: true });
    // Used 500 more than reserved: the key waits for them.
    expect(await settle({ ...base, reservedTokens: 0, usedTokens: 500 })).toBe(90_000);
    expect(await check({ ...base, nowMs: T0 + 29_000, tokens: 1 })).toMatchObject({ allowed: false, retryAfterMs: 1_060 });
  });

  it('uses the Redis clock when no time is passed, and lets idle counters expire', async () => {
    const id = keyId();
    const base = { keyId: id, model: 'llama', limits: { requestsPerMinute: 2 }, tokens: 0 };
    expect((await check(base)).allowed).toBe(true);
    expect((await check(base)).allowed).toBe(true);
    const refused = await check(base);
    expect(refused).toMatchObject({ allowed: false, limitedBy: 'requests' });
    expect(refused.allowed === false && refused.retryAfterMs).toBeGreaterThan(29_000);
    expect(refused.allowed === false && refused.retryAfterMs).toBeLessThanOrEqual(30_000);
    const ttl = await redis.pttl(rateLimitKeys(id, 'llama', PREFIX).requests);
    expect(ttl).toBeGreaterThan(59_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it('admits exactly the limit when router replicas race', async () => {
    const clients = [redis, new Redis(server.url, { disableClientInfo: true }), new Redis(server.url, { disableClientInfo: true })];
    try {
      const base = { keyId: keyId(), model: 'llama', limits: { requestsPerMinute: 20, tokensPerMinute: 2_000 }, tokens: 50, nowMs: T0 };
      const results = await Promise.all(Array.from({ length: 90 }, (_, i) => check(base, clients[i % clients.length])));
      expect(results.filter((r) => r.allowed)).toHaveLength(20);
    } finally {
      clients[1].disconnect();
      clients[2].disconnect();
    }
  });

  it('runs by SHA-1 once loaded, as EVALSHA callers do', async () => {
    expect(await redis.script('LOAD', RATE_LIMIT_CHECK_SCRIPT)).toBe(RATE_LIMIT_CHECK_SHA1);
    const call = rateLimitCheckCall({ keyId: keyId(), model: 'm', limits: { requestsPerMinute: 1 }, tokens: 0, nowMs: T0, prefix: PREFIX })!;
    const reply = await redis.evalsha(call.sha1, call.keys.length, ...call.keys, ...call.args);
    expect(parseRateLimitReply(reply)).toMatchObject({ allowed: true });
  });
});
