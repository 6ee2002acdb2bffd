/**
 * Requests and tokens per minute per API key and model, enforced in Redis with routing-core's
 * GCRA scripts (one atomic EVALSHA per request), so every router replica shares the limits.
 */
import type Redis from 'ioredis';
import {
  parseRateLimitReply,
  rateLimitCheckCall,
  rateLimitSettleCall,
  type ApiKeyLimits,
  type RateLimitResult,
  type RedisScriptCall,
} from '@gpufleet/routing-core';

export interface RateLimiterOptions {
  /** Key prefix: `RedisKeys.rateLimitPrefix(cluster)` (`gpufleet:<cluster>:ratelimit`). */
  readonly prefix: string;
  /** Limits are per minute; tests may shorten the period. */
  readonly periodMs?: number;
}

/** Redis did not answer: the caller applies RATE_LIMIT_FAIL_OPEN. */
export class RateLimitUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`rate limiter unavailable: ${(cause as Error)?.message ?? String(cause)}`);
  }
}

/** Ms between two log lines about Redis being unavailable to the limiter. */
const UNAVAILABLE_LOG_MS = 10_000;

export class RateLimiter {
  private lastUnavailableLog = 0;

  constructor(
    private readonly redis: Redis,
    private readonly options: RateLimiterOptions,
  ) {}

  /** Whether the key may run one more request reserving `tokens`; undefined limits pass without Redis. */
  async check(keyId: string, model: string, limits: ApiKeyLimits | undefined, tokens: number): Promise<RateLimitResult> {
    const call = rateLimitCheckCall({ keyId, model, limits, tokens, prefix: this.options.prefix, periodMs: this.options.periodMs });
    if (call === undefined) return { allowed: true };
    let reply: unknown;
    try {
      reply = await this.run(call);
    } catch (err) {
      throw new RateLimitUnavailableError(err);
    }
    return parseRateLimitReply(reply);
  }

  /** Whether to log that Redis is unavailable now: once per 10 s, not once per request. */
  shouldLogUnavailable(now: number = Date.now()): boolean {
    if (now - this.lastUnavailableLog < UNAVAILABLE_LOG_MS) return false;
    this.lastUnavailableLog = now;
    return true;
  }

  /** Corrects the tokens reserved by `check` to what the request used. */
  async settle(keyId: string, model: string, limits: ApiKeyLimits | undefined, reservedTokens: number, usedTokens: number): Promise<void> {
    const call = rateLimitSettleCall({ keyId, model, limits, reservedTokens, usedTokens, prefix: this.options.prefix, periodMs: this.options.periodMs });
    if (call !== undefined) await this.run(call);
  }

  private async run(call: RedisScriptCall): Promise<unknown> {
    try {
      return await this.redis.evalsha(call.sha1, call.keys.length, ...call.keys, ...call.args);
    } catch (err) {
      if (!/NOSCRIPT/.test((err as Error)?.message ?? '')) throw err;
      return this.redis.eval(call.script, call.keys.length, ...call.keys, ...call.args);
    }
  }
}
