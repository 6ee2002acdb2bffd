import { parseUsageDayKey, RedisKeys } from './redis-keys';

describe('Redis keys', () => {
  it('keeps every key of a cluster under gpufleet:<cluster>', () => {
    expect(RedisKeys.rateLimitPrefix('dev')).toBe('gpufleet:dev:ratelimit');
    expect(RedisKeys.usagePrefix('dev')).toBe('gpufleet:dev:usage');
    expect(RedisKeys.usageTotal('dev', 'k3x7q2m9a0bc')).toBe('gpufleet:dev:usage:total:k3x7q2m9a0bc');
    expect(RedisKeys.usageDay('dev', '2026-11-29', 'k3x7q2m9a0bc')).toBe('gpufleet:dev:usage:day:2026-11-29:k3x7q2m9a0bc');
    expect(RedisKeys.usageDayPrefix('dev')).toBe('gpufleet:dev:usage:day:');
  });

  it('reads a day hash key back', () => {
    expect(parseUsageDayKey('dev', RedisKeys.usageDay('dev', '2026-11-29', 'anonymous'))).toEqual({ day: '2026-11-29', keyId: 'anonymous' });
  });

  it.each([
    ['another cluster', 'gpufleet:prod:usage:day:2026-11-29:anonymous'],
    ['a total', 'gpufleet:dev:usage:total:anonymous'],
    ['no key id', 'gpufleet:dev:usage:day:2026-11-29:'],
    ['a short day', 'gpufleet:dev:usage:day:2026-1-29:anonymous'],
    ['no separator', 'gpufleet:dev:usage:day:2026-11-29anonymous'],
  ])('rejects a key of %s', (_what, key) => {
    expect(parseUsageDayKey('dev', key)).toBeUndefined();
  });

  it.each(['Dev', 'a:b', '', '*'])('rejects the cluster name %j', (cluster) => {
    expect(() => RedisKeys.rateLimitPrefix(cluster)).toThrow(`cluster name "${cluster}" is invalid`);
    expect(() => RedisKeys.usageDay(cluster, '2026-11-29', 'anonymous')).toThrow(`cluster name "${cluster}" is invalid`);
  });
});
