import {
  keyOfSpec,
  keyOfStoreKey,
  parsePodStoreKey,
  parseStoreKey,
  parseWorkloadKey,
  podId,
  podLogsPath,
  podStoreKey,
  storeKey,
  workloadKey,
  type PodRef,
} from './keys';

describe('record keys "<namespace>/<name>" and their bucket keys "<namespace>.<name>"', () => {
  it('round-trips a record key through its bucket key', () => {
    const key = workloadKey('team-a', 'llama');
    expect(key).toBe('team-a/llama');
    expect(keyOfSpec({ namespace: 'team-a', name: 'llama' })).toBe(key);
    expect(parseWorkloadKey(key)).toEqual({ namespace: 'team-a', name: 'llama' });
    expect(storeKey(key)).toBe('team-a.llama');
    expect(parseStoreKey('team-a.llama')).toEqual({ namespace: 'team-a', name: 'llama' });
    expect(keyOfStoreKey(storeKey(key))).toBe(key);
  });

  it.each(['llama', 'team-a/llama/x', '/llama', 'team-a/', 'team.a/llama', 'team-a/llama.v2', ''])('rejects the record key %j', (key) => {
    expect(parseWorkloadKey(key)).toBeUndefined();
  });

  it.each(['llama', 'team-a.llama.x', '.llama', 'team-a.', 'team-a/llama', ''])('rejects the bucket key %j', (stored) => {
    expect(parseStoreKey(stored)).toBeUndefined();
  });

  it('keeps a bucket key of another shape as it is, which no record key can equal', () => {
    expect(keyOfStoreKey('stray')).toBe('stray');
    expect(keyOfStoreKey('a.b.c')).toBe('a.b.c');
  });
});

describe('pod keys', () => {
  const ref: PodRef = { node: 'h100-0', namespace: 'team-a', workload: 'llama', podSet: 'server', replica: 1, pod: 0 };

  it('round-trips a pod through its key in the pods bucket', () => {
    expect(podStoreKey(ref)).toBe('h100-0.team-a.llama.server.1.0');
    expect(parsePodStoreKey(podStoreKey(ref))).toEqual(ref);
  });

  it.each([
    ['a non-numeric replica', 'h100-0.team-a.llama.server.x.0'],
    ['a non-numeric pod', 'h100-0.team-a.llama.server.1.-1'],
    ['five parts', 'team-a.llama.server.1.0'],
    ['seven parts', 'h100.0.team-a.llama.server.1.0'],
    ['an empty part', 'h100-0..llama.server.1.0'],
  ])('rejects a key with %s', (_what, key) => {
    expect(parsePodStoreKey(key)).toBeUndefined();
  });

  it('names a pod on its node and the path of its log', () => {
    expect(podId(ref)).toBe('team-a/llama/server/1/0');
    expect(podLogsPath(ref)).toBe('/v1/pods/team-a/llama/server/1/0/logs');
  });
});
