import { assertClusterName } from './events';

/**
 * Keys the inference router keeps in Redis, one family per cluster (`gpufleet:<cluster>:…`), so
 * several clusters can share one Redis. Documented in docs/events.md#redis-keys.
 */
export const RedisKeys = {
  /**
   * Prefix of the rate limiter's GCRA keys; routing-core's `rateLimitKeys` appends
   * `:{<key id>:<model>}:requests` and `:tokens`. Each holds a string (the theoretical arrival
   * time, ms) and expires when its bucket is full again.
   */
  rateLimitPrefix: (cluster: string) => `${redisPrefix(cluster)}:ratelimit`,
  /** Prefix of every usage hash: `<prefix>:total:<key id>` and `<prefix>:day:<YYYY-MM-DD>:<key id>`. */
  usagePrefix: (cluster: string) => `${redisPrefix(cluster)}:usage`,
  /** All-time usage of one API key: a hash of `<counter>|<deployment>|<model>` → count, never expiring. */
  usageTotal: (cluster: string, keyId: string) => `${RedisKeys.usagePrefix(cluster)}:total:${keyId}`,
  /** Usage of one API key on one UTC day (`YYYY-MM-DD`): fields as usageTotal; expires USAGE_RETENTION_DAYS after its last write. */
  usageDay: (cluster: string, day: string, keyId: string) => `${RedisKeys.usageDayPrefix(cluster)}${day}:${keyId}`,
  /** What every day hash of the cluster starts with (SCAN for `<this>*`). */
  usageDayPrefix: (cluster: string) => `${RedisKeys.usagePrefix(cluster)}:day:`,
} as const;

function redisPrefix(cluster: string): string {
  assertClusterName(cluster);
  return `gpufleet:${cluster}`;
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** The inverse of `RedisKeys.usageDay`; undefined for a key of another shape or cluster. */
export function parseUsageDayKey(cluster: string, key: string): { day: string; keyId: string } | undefined {
  const prefix = RedisKeys.usageDayPrefix(cluster);
  if (!key.startsWith(prefix)) return undefined;
  const rest = key.slice(prefix.length);
  const day = rest.slice(0, 10);
  const keyId = rest.slice(11);
  if (!DAY.test(day) || rest[10] !== ':' || keyId === '') return undefined;
  return { day, keyId };
}
