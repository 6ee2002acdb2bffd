import Redis from 'ioredis';
import type { RouterConfig } from './config';

/** Injection token of the ioredis client. */
export const REDIS = Symbol('REDIS');

/**
 * The router's Redis client. Commands fail fast while disconnected (no offline queue) and after
 * REDIS_TIMEOUT_S, so a Redis outage costs requests at most that much latency; the rate limiter
 * then follows RATE_LIMIT_FAIL_OPEN and the meter keeps its counts for the next flush.
 */
export function createRedis(config: Pick<RouterConfig, 'REDIS_URL' | 'REDIS_PASSWORD' | 'REDIS_TIMEOUT_S'>): Redis {
  return new Redis(config.REDIS_URL, {
    password: config.REDIS_PASSWORD,
    // Debian's Redis 7.0 rejects CLIENT SETINFO.
    disableClientInfo: true,
    enableOfflineQueue: false,
    commandTimeout: Math.ceil(config.REDIS_TIMEOUT_S * 1000),
    maxRetriesPerRequest: 1,
    retryStrategy: (times) => Math.min(100 * times, 2000),
    connectionName: 'gpufleet-inference-router',
    tls: config.REDIS_URL.startsWith('rediss://') ? {} : undefined,
  });
}
