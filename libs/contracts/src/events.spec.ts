import { NodeHeartbeat } from './generated';
import { Buckets, Events, everyClusterSubjectOf, kvCacheEventsSubject, publishSubjectOf, RawSubjects, scopedSubjectOf, scopeOfSubject, subjectOf } from './events';

describe('subjects', () => {
  it('puts every event under gpufleet.<cluster>.<domain>.<name>', () => {
    expect(subjectOf(Events.usage, 'dev')).toBe('gpufleet.dev.router.usage');
    expect(everyClusterSubjectOf(Events.usage)).toBe('gpufleet.*.router.usage');
    expect(Events.usage.type).toBe('router.usage.v1');
  });

  it('puts device events under their node, so a node identity may publish only its own', () => {
    const beat = NodeHeartbeat.fromPartial({ nodeName: 'h100-0' });
    expect(publishSubjectOf(Events.heartbeat, 'dev', beat)).toBe('gpufleet.dev.devices.heartbeat.h100-0');
    expect(subjectOf(Events.heartbeat, 'dev')).toBe('gpufleet.dev.devices.heartbeat.>');
    expect(everyClusterSubjectOf(Events.inventory)).toBe('gpufleet.*.devices.inventory.>');
    expect(scopedSubjectOf(Events.detectionFailed, 'dev', 'node.example.com')).toBe('gpufleet.dev.devices.detection_failed.node.example.com');
    expect(scopeOfSubject(Events.heartbeat, 'gpufleet.dev.devices.heartbeat.node.example.com')).toBe('node.example.com');
    for (const bad of ['', '*', '>', 'a b', 'a..b', '.a']) expect(() => scopedSubjectOf(Events.heartbeat, 'dev', bad)).toThrow('cannot be a subject scope');
    expect(() => scopedSubjectOf(Events.usage, 'dev', 'x')).toThrow('is not scoped by node');
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
