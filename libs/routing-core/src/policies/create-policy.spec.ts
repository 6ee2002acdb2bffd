import { CacheAwarePolicy } from './cache-aware';
import { createRoutingPolicy, parseRoutingPolicyConfig } from './create-policy';

describe('createRoutingPolicy', () => {
  it('builds each policy by name', () => {
    expect(createRoutingPolicy({ policy: 'round_robin' }).name).toBe('round_robin');
    expect(createRoutingPolicy({ policy: 'least_request' }).name).toBe('least_request');
    expect(createRoutingPolicy({ policy: 'session' }).name).toBe('session');
    const cacheAware = createRoutingPolicy({ policy: 'cache_aware', cacheThreshold: 0.7 });
    expect(cacheAware).toBeInstanceOf(CacheAwarePolicy);
    expect((cacheAware as CacheAwarePolicy).options.cacheThreshold).toBe(0.7);
  });

  it('fills in cache_aware defaults', () => {
    expect(parseRoutingPolicyConfig({ policy: 'cache_aware' })).toEqual({
      policy: 'cache_aware',
      cacheThreshold: 0.5,
      balanceAbsThreshold: 32,
      balanceRelThreshold: 1.5,
      maxCharsPerReplica: 4 * 1024 * 1024,
    });
  });

  it('rejects bad configuration with the field and what was expected', () => {
    expect(() => parseRoutingPolicyConfig({ policy: 'random' })).toThrow(
      'INVALID_ARGUMENT: routing.policy: expected one of round_robin, least_request, session, cache_aware, got "random"',
    );
    expect(() => parseRoutingPolicyConfig({})).toThrow('routing.policy: expected one of round_robin, least_request, session, cache_aware, got nothing');
    expect(() => parseRoutingPolicyConfig('cache_aware')).toThrow('routing: expected an object with a `policy`, got "cache_aware"');
    expect(() => parseRoutingPolicyConfig({ policy: 'cache_aware', cacheTreshold: 0.2 }, 'spec.router')).toThrow(
      'spec.router.cacheTreshold: expected one of the cache_aware options cacheThreshold, balanceAbsThreshold, balanceRelThreshold, maxCharsPerReplica, got an unknown option',
    );
    expect(() => parseRoutingPolicyConfig({ policy: 'cache_aware', cacheThreshold: '0.5' })).toThrow(
      'routing.cacheThreshold: expected a number from 0 to 1, got "0.5"',
    );
    expect(() => parseRoutingPolicyConfig({ policy: 'session', cacheThreshold: 0.5 })).toThrow(
      'routing.cacheThreshold: expected no options (policy session takes none), got an option',
    );
  });
});
