import { checkInteger, checkNumber, RoutingConfigError, shown } from '../errors';
import { DEFAULT_MAX_CHARS_PER_REPLICA } from '../prefix-tree';

/** Tuning of the cache_aware policy; every field has a default. Names and defaults follow SGLang's router. */
export interface CacheAwareOptions {
  /**
   * Share of the prompt (0-1) the best-matching replica must already have seen for the request
   * to follow it. Default 0.5: below half, recomputing elsewhere costs little more than the
   * queueing the affinity would risk.
   */
  readonly cacheThreshold?: number;
  /**
   * Load is unbalanced when the busiest replica has more than this many requests over the least
   * busy (default 32) AND more than `balanceRelThreshold` times as many; then the request goes to
   * the least loaded replica whatever it matches. Requests are counted by `effectiveLoad`: this
   * router's in flight plus other routers' seen in the engine's metrics.
   */
  readonly balanceAbsThreshold?: number;
  /** See balanceAbsThreshold; a number ≥ 1 (default 1.5). */
  readonly balanceRelThreshold?: number;
  /**
   * Prompt characters remembered per replica and model (default 4 Mi, about a million tokens).
   * Size it like one replica's prefix cache.
   */
  readonly maxCharsPerReplica?: number;
}

export type ResolvedCacheAwareOptions = Required<CacheAwareOptions>;

export const CACHE_AWARE_DEFAULTS: ResolvedCacheAwareOptions = Object.freeze({
  cacheThreshold: 0.5,
  balanceAbsThreshold: 32,
  balanceRelThreshold: 1.5,
  maxCharsPerReplica: DEFAULT_MAX_CHARS_PER_REPLICA,
});

const OPTION_NAMES = Object.keys(CACHE_AWARE_DEFAULTS) as (keyof CacheAwareOptions)[];

/**
 * Checks options that may come straight from configuration (JSON, YAML, environment) and fills
 * in defaults. `field` prefixes the option names in errors: `routing.cacheThreshold: …`.
 * `extraKeys` are keys of the enclosing object that are not options (`policy`).
 */
export function resolveCacheAwareOptions(raw: unknown, field = 'routing', extraKeys: readonly string[] = []): ResolvedCacheAwareOptions {
  if (raw === undefined) return CACHE_AWARE_DEFAULTS;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new RoutingConfigError(field, 'an object of cache_aware options', shown(raw));
  }
  const given = raw as Record<string, unknown>;
  for (const key of Object.keys(given)) {
    if (!(OPTION_NAMES as string[]).includes(key) && !extraKeys.includes(key)) {
      throw new RoutingConfigError(`${field}.${key}`, `one of the cache_aware options ${OPTION_NAMES.join(', ')}`, 'an unknown option');
    }
  }
  const value = <K extends keyof CacheAwareOptions>(key: K): unknown => given[key] ?? CACHE_AWARE_DEFAULTS[key];
  return {
    cacheThreshold: checkNumber(`${field}.cacheThreshold`, value('cacheThreshold'), 0, 1),
    balanceAbsThreshold: checkInteger(`${field}.balanceAbsThreshold`, value('balanceAbsThreshold'), 0),
    balanceRelThreshold: checkNumber(`${field}.balanceRelThreshold`, value('balanceRelThreshold'), 1, Infinity),
    maxCharsPerReplica: checkInteger(`${field}.maxCharsPerReplica`, value('maxCharsPerReplica'), 1),
  };
}
