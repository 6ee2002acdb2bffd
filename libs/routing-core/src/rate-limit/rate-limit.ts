import type { ApiKeyLimits } from '../api-keys/authorize';
import { checkInteger, RoutingConfigError, shown } from '../errors';
import { RATE_LIMIT_CHECK_SCRIPT, RATE_LIMIT_CHECK_SHA1, RATE_LIMIT_SETTLE_SCRIPT, RATE_LIMIT_SETTLE_SHA1 } from './scripts';

/** Limits are per minute. */
export const RATE_LIMIT_PERIOD_MS = 60_000;

/** One EVAL / EVALSHA: `redis.evalsha(sha1, keys.length, ...keys, ...args)`, falling back to `eval(script, …)` on NOSCRIPT. */
export interface RedisScriptCall {
  readonly script: string;
  readonly sha1: string;
  readonly keys: readonly string[];
  readonly args: readonly string[];
}

export interface RateLimitKeys {
  readonly requests: string;
  readonly tokens: string;
}

/**
 * The Redis keys counting one API key's use of one model. Both carry the hash tag
 * `{<key id>:<model>}` so a Redis Cluster puts them in one slot, which a multi-key EVAL needs.
 * Parts are URI-encoded, so a model name with `:`, `{` or `}` cannot collide with or break out
 * of the tag. `prefix` is the cluster's, `RedisKeys.rateLimitPrefix(cluster)` of @gpufleet/contracts.
 */
export function rateLimitKeys(keyId: string, model: string, prefix: string): RateLimitKeys {
  if (/[{}]/.test(prefix)) throw new RoutingConfigError('rateLimit.prefix', 'a key prefix without { or }', shown(prefix));
  const tag = `{${encodeURIComponent(keyId)}:${encodeURIComponent(model)}}`;
  return { requests: `${prefix}:${tag}:requests`, tokens: `${prefix}:${tag}:tokens` };
}

export interface RateLimitCheck {
  readonly keyId: string;
  readonly model: string;
  readonly limits: ApiKeyLimits | undefined;
  /**
   * Tokens to reserve before the request runs: prompt tokens plus the completion budget
   * (`max_tokens`, or the router's default). Settled after the response with settleCall.
   */
  readonly tokens: number;
  /** Ms since the epoch; leave unset to use the Redis server's clock (tests set it). */
  readonly nowMs?: number;
  /** `RedisKeys.rateLimitPrefix(cluster)`. */
  readonly prefix: string;
  /** Default RATE_LIMIT_PERIOD_MS; shorter periods are for tests. */
  readonly periodMs?: number;
}

/** The EVAL that checks and reserves, or undefined when the key has no limits (skip Redis). */
export function rateLimitCheckCall(check: RateLimitCheck): RedisScriptCall | undefined {
  const rpm = optionalLimit('limits.requestsPerMinute', check.limits?.requestsPerMinute);
  const tpm = optionalLimit('limits.tokensPerMinute', check.limits?.tokensPerMinute);
  if (rpm === 0 && tpm === 0) return undefined;
  const tokens = checkInteger('tokens', check.tokens, 0);
  const keys = rateLimitKeys(check.keyId, check.model, check.prefix);
  return {
    script: RATE_LIMIT_CHECK_SCRIPT,
    sha1: RATE_LIMIT_CHECK_SHA1,
    keys: [keys.requests, keys.tokens],
    args: [String(rpm), String(tpm), String(tokens), String(period(check.periodMs)), nowArg(check.nowMs)],
  };
}

export interface TokenSettlement {
  readonly keyId: string;
  readonly model: string;
  readonly limits: ApiKeyLimits | undefined;
  readonly reservedTokens: number;
  /** Tokens the request really used (prompt + completion, from the engine's usage). */
  readonly usedTokens: number;
  readonly nowMs?: number;
  /** `RedisKeys.rateLimitPrefix(cluster)`. */
  readonly prefix: string;
  readonly periodMs?: number;
}

/** The EVAL that settles reserved against used tokens, or undefined when there is nothing to settle. */
export function rateLimitSettleCall(settlement: TokenSettlement): RedisScriptCall | undefined {
  const tpm = optionalLimit('limits.tokensPerMinute', settlement.limits?.tokensPerMinute);
  const reserved = checkInteger('reservedTokens', settlement.reservedTokens, 0);
  const used = checkInteger('usedTokens', settlement.usedTokens, 0);
  if (tpm === 0 || used === reserved) return undefined;
  const keys = rateLimitKeys(settlement.keyId, settlement.model, settlement.prefix);
  return {
    script: RATE_LIMIT_SETTLE_SCRIPT,
    sha1: RATE_LIMIT_SETTLE_SHA1,
    keys: [keys.tokens],
    args: [String(tpm), String(used - reserved), String(period(settlement.periodMs)), nowArg(settlement.nowMs)],
  };
}

export type RateLimitDimension = 'requests' | 'tokens';

/** Where a key stands in one dimension; absent for an unlimited dimension. */
export interface RateLimitStanding {
  /** Units left right now (after this request's reservation when it was allowed). */
  readonly remaining: number;
  /** Ms until the full limit is available again. */
  readonly resetMs: number;
}

export type RateLimitResult =
  | {
      readonly allowed: true;
      readonly requests?: RateLimitStanding;
      readonly tokens?: RateLimitStanding;
    }
  | {
      readonly allowed: false;
      /** `rate_limited`: try again after retryAfterMs; `exceeds_limit`: the request alone needs more tokens than a minute allows. */
      readonly reason: 'rate_limited' | 'exceeds_limit';
      readonly limitedBy: RateLimitDimension;
      /** Ms to wait; 0 with exceeds_limit (waiting does not help). */
      readonly retryAfterMs: number;
      readonly requests?: RateLimitStanding;
      readonly tokens?: RateLimitStanding;
    };

/** Reads the check script's reply (as ioredis returns it: integers and strings). */
export function parseRateLimitReply(reply: unknown): RateLimitResult {
  if (!Array.isArray(reply) || reply.length !== 7) throw new Error(`rate limit script replied ${describe(reply)}, expected an array of 7`);
  const [allowed, retry, limitedBy, remainingRequests, remainingTokens, resetRequests, resetTokens] = reply.map((v: unknown) =>
    typeof v === 'string' && v !== '' && /^-?\d+$/.test(v) ? Number(v) : v,
  );
  const requests = standing(remainingRequests, resetRequests);
  const tokens = standing(remainingTokens, resetTokens);
  const dimensions = { ...(requests && { requests }), ...(tokens && { tokens }) };
  if (allowed === 1) return { allowed: true, ...dimensions };
  if (allowed !== 0 || typeof retry !== 'number' || (limitedBy !== 'requests' && limitedBy !== 'tokens')) {
    throw new Error(`rate limit script replied ${describe(reply)}`);
  }
  return retry < 0
    ? { allowed: false, reason: 'exceeds_limit', limitedBy, retryAfterMs: 0, ...dimensions }
    : { allowed: false, reason: 'rate_limited', limitedBy, retryAfterMs: retry, ...dimensions };
}

function standing(remaining: unknown, resetMs: unknown): RateLimitStanding | undefined {
  if (typeof remaining !== 'number' || typeof resetMs !== 'number' || remaining < 0) return undefined;
  return { remaining, resetMs };
}

/** 0 means unlimited in the scripts' arguments. */
function optionalLimit(field: string, value: number | undefined): number {
  return value === undefined ? 0 : checkInteger(field, value, 1);
}

function period(periodMs: number | undefined): number {
  return periodMs === undefined ? RATE_LIMIT_PERIOD_MS : checkInteger('periodMs', periodMs, 1);
}

function nowArg(nowMs: number | undefined): string {
  if (nowMs === undefined) return '';
  if (!Number.isFinite(nowMs) || nowMs < 0) throw new RoutingConfigError('nowMs', 'ms since the epoch', shown(nowMs));
  return nowMs.toFixed(3);
}

function describe(value: unknown): string {
  return JSON.stringify(value)?.slice(0, 200) ?? String(value);
}
