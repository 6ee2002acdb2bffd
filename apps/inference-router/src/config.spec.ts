import { ConfigError } from '@gpufleet/config';
import { loadRouterConfig } from './config';
import { routingPolicyConfig } from './router.runtime';

describe('router configuration', () => {
  it('has working defaults', () => {
    const config = loadRouterConfig({});
    expect(config.HTTP_PORT).toBe(8000);
    expect(config.AUTH_REQUIRED).toBe(true);
    expect(config.ROUTING_POLICY).toBe('cache_aware');
    expect(routingPolicyConfig(config)).toEqual({ policy: 'cache_aware', cacheThreshold: 0.5, balanceAbsThreshold: 32, balanceRelThreshold: 1.5, maxCharsPerReplica: expect.any(Number) });
    expect(routingPolicyConfig(loadRouterConfig({ ROUTING_POLICY: 'least_request' }))).toEqual({ policy: 'least_request' });
  });

  it('names every bad variable', () => {
    try {
      loadRouterConfig({ ROUTING_POLICY: 'random', CACHE_THRESHOLD: '1.5', OPS_PORT: '8000', EJECT_BASE_S: '10', EJECT_MAX_S: '5', REDIS_URL: 'http://x' });
      throw new Error('accepted');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      const message = (err as Error).message;
      expect(message).toContain('ROUTING_POLICY: expected one of round_robin, least_request, session, cache_aware');
      expect(message).toContain('CACHE_THRESHOLD: expected a number 0-1');
      expect(message).toContain('REDIS_URL');
    }
    expect(() => loadRouterConfig({ OPS_PORT: '8000' })).toThrow('OPS_PORT: must differ from HTTP_PORT (both 8000)');
    expect(() => loadRouterConfig({ EJECT_BASE_S: '10', EJECT_MAX_S: '5' })).toThrow('EJECT_MAX_S: must be at least EJECT_BASE_S');
    expect(() => loadRouterConfig({ ENGINE_METRICS_INTERVAL_S: '10ms' })).toThrow('ENGINE_METRICS_INTERVAL_S: must be 0 (off) or at least 0.05 s');
  });

  it('reads the engines’ /metrics every second by default, 0 turning it off', () => {
    expect(loadRouterConfig({})).toMatchObject({ ENGINE_METRICS_INTERVAL_S: 1, ENGINE_METRICS_TIMEOUT_S: 1 });
    expect(loadRouterConfig({ ENGINE_METRICS_INTERVAL_S: '0' }).ENGINE_METRICS_INTERVAL_S).toBe(0);
  });
});
