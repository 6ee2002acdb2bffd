import { ManualClock, PassiveHealth, RoundRobinPolicy } from '@gpufleet/routing-core';
import { ModelDirectory } from './model-directory';
import { ReplicaPool, type AcquireFailure } from './replica-pool';
import { ModelDeployment } from '@gpufleet/contracts';

function pool(options: { cap?: number; queueMax?: number; queueTimeoutMs?: number; clock?: ManualClock } = {}): ReplicaPool {
  return new ReplicaPool({
    model: 'm',
    policy: new RoundRobinPolicy(),
    health: new PassiveHealth({ consecutiveFailures: 1, baseEjectionMs: 1000 }, options.clock ?? new ManualClock(0)),
    maxInFlightPerReplica: options.cap ?? 0,
    queueMax: options.queueMax ?? 10,
    queueTimeoutMs: options.queueTimeoutMs ?? 60_000,
  });
}

const endpoints = (...ports: number[]) => ports.map((p) => ({ endpoint: `http://127.0.0.1:${p}`, deployment: 'ns.d', role: 'server' }));

describe('ReplicaPool', () => {
  afterEach(() => jest.useRealTimers());

  it('keeps replicas (and their in-flight counts) that stay in the set', () => {
    const p = pool();
    p.setEndpoints(endpoints(1, 2));
    const first = p.replicas[0];
    p.acquire(first);
    p.setEndpoints(endpoints(1, 3));
    expect(p.replicas[0]).toBe(first);
    expect(p.replicas[0].inFlight).toBe(1);
    expect(p.replicas.map((r) => r.id)).toEqual(['http://127.0.0.1:1', 'http://127.0.0.1:3']);
    p.close();
  });

  it('ignores passive health when it has ejected every replica (panic mode)', () => {
    const clock = new ManualClock(0);
    const p = pool({ clock });
    p.setEndpoints(endpoints(1, 2));
    p.health.record('http://127.0.0.1:1', 'connect_error');
    expect(p.refresh()).toBe(true);
    expect(p.replicas.map((r) => r.ejected)).toEqual([true, false]);
    p.health.record('http://127.0.0.1:2', 'connect_error');
    expect(p.refresh()).toBe(true);
    expect(p.replicas.map((r) => r.ejected)).toEqual([false, false]);
    p.close();
  });

  it('queues requests while every replica is at its cap, and wakes them in order', () => {
    const p = pool({ cap: 1, queueMax: 1 });
    p.setEndpoints(endpoints(1));
    const replica = p.replicas[0];
    const events: string[] = [];
    p.whenAvailable(() => {
      events.push('a');
      p.acquire(replica);
    }, (r) => events.push(`a:${r}`));
    p.whenAvailable(() => {
      events.push('b');
      p.acquire(replica);
    }, (r) => events.push(`b:${r}`));
    p.whenAvailable(() => events.push('c'), (r: AcquireFailure) => events.push(`c:${r}`));
    expect(events).toEqual(['a', 'c:queue_full']);
    expect(p.queued).toBe(1);
    p.release(replica);
    expect(events).toEqual(['a', 'c:queue_full', 'b']);
    expect(p.queued).toBe(0);
    p.close();
  });

  it('fails a waiter after the queue timeout, and skips withdrawn ones', () => {
    jest.useFakeTimers();
    const p = pool({ cap: 1, queueTimeoutMs: 100 });
    p.setEndpoints(endpoints(1));
    p.acquire(p.replicas[0]);
    const events: string[] = [];
    const withdraw = p.whenAvailable(() => events.push('x'), (r) => events.push(`x:${r}`));
    p.whenAvailable(() => events.push('y'), (r) => events.push(`y:${r}`));
    withdraw?.();
    jest.advanceTimersByTime(150);
    expect(events).toEqual(['y:queue_timeout']);
    p.close();
  });

  it('does not queue behind withdrawn waiters when a replica is free', () => {
    const p = pool({ cap: 1 });
    p.setEndpoints(endpoints(1));
    const replica = p.replicas[0];
    p.acquire(replica);
    const withdraw = p.whenAvailable(() => undefined, () => undefined);
    withdraw?.();
    p.replicas[0].inFlight = 0; // finished without waking anyone (e.g. released before the withdrawal)
    const events: string[] = [];
    p.whenAvailable(() => events.push('ready'), (r) => events.push(r));
    expect(events).toEqual(['ready']);
    p.close();
  });

  it('fails waiters when the model loses its replicas', () => {
    const p = pool({ cap: 1 });
    p.setEndpoints(endpoints(1));
    p.acquire(p.replicas[0]);
    const events: string[] = [];
    p.whenAvailable(() => events.push('x'), (r) => events.push(`x:${r}`));
    p.setEndpoints([]);
    expect(events).toEqual(['x:no_replica']);
    p.whenAvailable(() => events.push('y'), (r) => events.push(`y:${r}`));
    expect(events).toEqual(['x:no_replica', 'y:no_replica']);
  });
});

describe('ModelDirectory', () => {
  const directory = () =>
    new ModelDirectory({
      createPolicy: () => new RoundRobinPolicy(),
      createHealth: () => new PassiveHealth(),
      maxInFlightPerReplica: 0,
      queueMax: 1,
      queueTimeoutMs: 1000,
    });
  const dep = (model: string, ...ports: number[]) =>
    ModelDeployment.fromPartial({
      spec: { model, servedModelName: model, roles: [{ role: 'server', replicas: ports.length }] },
      status: { replicas: ports.map((p) => ({ role: 'server', state: 'Ready', endpoint: `http://h:${p}` })) },
    });

  it('merges the replicas of every deployment serving a model name and follows renames and deletes', () => {
    const d = directory();
    d.apply({ kind: 'put', key: 'a.one', value: dep('m', 1), revision: 1 });
    d.apply({ kind: 'put', key: 'b.two', value: dep('m', 2, 3), revision: 2 });
    expect(d.models).toEqual(['m']);
    expect(d.pool('m')?.replicas.map((r) => [r.id, r.deployment])).toEqual([
      ['http://h:1', 'a.one'],
      ['http://h:2', 'b.two'],
      ['http://h:3', 'b.two'],
    ]);
    expect(d.pool('m')?.desired).toBe(3);
    d.apply({ kind: 'put', key: 'a.one', value: dep('other', 1), revision: 3 });
    expect(d.models).toEqual(['m', 'other']);
    expect(d.pool('m')?.readyCount).toBe(2);
    d.apply({ kind: 'delete', key: 'b.two', revision: 4 });
    expect(d.models).toEqual(['other']);
    expect(d.pool('m')).toBeUndefined();
    d.close();
  });

  it('keeps a model whose replicas are all down, with none ready', () => {
    const d = directory();
    d.apply({ kind: 'put', key: 'a.one', value: dep('m'), revision: 1 });
    expect(d.pool('m')?.readyCount).toBe(0);
    d.close();
  });
});
