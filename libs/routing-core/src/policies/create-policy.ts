import { RoutingConfigError, shown } from '../errors';
import { CacheAwareOptions, resolveCacheAwareOptions } from './cache-aware-options';
import { CacheAwarePolicy } from './cache-aware';
import { LeastRequestPolicy } from './least-request';
import { RoundRobinPolicy } from './round-robin';
import { ROUTING_POLICY_NAMES, RoutingPolicy } from './routing-policy';
import { SessionAffinityPolicy } from './session-affinity';

/** A deployment's routing configuration; only cache_aware takes options. */
export type RoutingPolicyConfig =
  | { readonly policy: 'round_robin' }
  | { readonly policy: 'least_request' }
  | { readonly policy: 'session' }
  | ({ readonly policy: 'cache_aware' } & CacheAwareOptions);

/**
 * Checks a routing configuration as it comes from a deployment spec or the environment and
 * fills in defaults; errors name the field under `field` (`routing.policy: expected …`).
 */
export function parseRoutingPolicyConfig(raw: unknown, field = 'routing'): RoutingPolicyConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new RoutingConfigError(field, 'an object with a `policy`', shown(raw));
  }
  const { policy, ...rest } = raw as Record<string, unknown>;
  switch (policy) {
    case 'round_robin':
    case 'least_request':
    case 'session': {
      const extra = Object.keys(rest)[0];
      if (extra !== undefined) throw new RoutingConfigError(`${field}.${extra}`, `no options (policy ${policy} takes none)`, 'an option');
      return { policy };
    }
    case 'cache_aware':
      return { policy, ...resolveCacheAwareOptions(rest, field) };
    default:
      throw new RoutingConfigError(`${field}.policy`, `one of ${ROUTING_POLICY_NAMES.join(', ')}`, shown(policy));
  }
}

/** A fresh policy instance for one deployment (policies keep per-deployment state). */
export function createRoutingPolicy(config: RoutingPolicyConfig, field = 'routing'): RoutingPolicy {
  const checked = parseRoutingPolicyConfig(config, field);
  switch (checked.policy) {
    case 'round_robin':
      return new RoundRobinPolicy();
    case 'least_request':
      return new LeastRequestPolicy();
    case 'session':
      return new SessionAffinityPolicy();
    case 'cache_aware': {
      const { policy: _policy, ...options } = checked;
      return new CacheAwarePolicy(options, field);
    }
  }
}
