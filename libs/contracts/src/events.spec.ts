import { Buckets, Events, everyClusterSubjectOf, kvCacheEventsSubject, RawSubjects, subjectOf } from './events';

describe('subjects', () => {
  it('puts every event under gpufleet.<cluster>.<domain>.<name>', () => {
    expect(subjectOf(Events.heartbeat, 'dev')).toBe('gpufleet.dev.devices.heartbeat');
    expect(everyClusterSubjectOf(Events.usage)).toBe('gpufleet.*.router.usage');
    expect(Events.usage.type).toBe('router.usage.v1');
  });

  it('gives each engine replica its own KV-cache events subject, five tokens deep', () => {
    expect(kvCacheEventsSubject('dev', 'sim-1')).toBe('gpufleet.dev.kv.events.sim-1');
    expect(kvCacheEventsSubject('dev', '*')).toBe('gpufleet.dev.kv.events.*');
    expect(RawSubjects.kvCacheEvents.type).toBe('kv.events.v1');
  });

  it.each(['Dev', 'a.b', '', '*', '>', 'x'.repeat(64)])('rejects the cluster name %j', (cluster) => {
    expect(() => subjectOf(Events.heartbeat, cluster)).toThrow(`cluster name "${cluster}" is invalid`);
    expect(() => kvCacheEventsSubject(cluster, 'sim-1')).toThrow(`cluster name "${cluster}" is invalid`);
    expect(() => Buckets.workloads(cluster)).toThrow(`cluster name "${cluster}" is invalid`);
  });

  it.each(['a.b', '', '>', 'a b', 'x'.repeat(129)])('rejects the replica name %j', (replica) => {
    expect(() => kvCacheEventsSubject('dev', replica)).toThrow(`replica name "${replica}" is invalid`);
  });
});
