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
    connectTimeoutMs: 1000,
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
      connectTimeoutMs: 1000,
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

  const pd = (model: string, prefill: number[], decode: number[], states: Record<number, string> = {}) =>
    ModelDeployment.fromPartial({
      spec: {
        model,
        servedModelName: model,
        roles: [
          { role: 'prefill', replicas: prefill.length },
          { role: 'decode', replicas: decode.length },
        ],
      },
      status: {
        replicas: [
          ...prefill.map((p) => ({ role: 'prefill', state: states[p] ?? 'Ready', endpoint: `http://h:${p}` })),
          ...decode.map((p) => ({ role: 'decode', state: states[p] ?? 'Ready', endpoint: `http://h:${p}` })),
        ],
      },
    });

  it('gives each disaggregated deployment a prefill pool its decode replicas point to', () => {
    const d = directory();
    d.apply({ kind: 'put', key: 'a.pd', value: pd('m', [1, 2], [3, 4]), revision: 1 });
    d.apply({ kind: 'put', key: 'b.server', value: dep('m', 5), revision: 2 });
    const pool = d.pool('m');
    const prefill = d.prefillPool('a.pd');
    expect(pool?.replicas.map((r) => [r.id, r.role])).toEqual([
      ['http://h:3', 'decode'],
      ['http://h:4', 'decode'],
      ['http://h:5', 'server'],
    ]);
    expect(prefill?.replicas.map((r) => r.id)).toEqual(['http://h:1', 'http://h:2']);
    expect(prefill?.deployments).toEqual(['a.pd']);
    expect(pool?.replicas.map((r) => r.prefill)).toEqual([prefill, prefill, undefined]);
    expect(d.prefillPool('b.server')).toBeUndefined();
    expect([pool?.prefillReady, pool?.prefillDesired]).toEqual([2, 2]);

    // Prefill replicas come and go; the pool and its decode replicas stay.
    d.apply({ kind: 'put', key: 'a.pd', value: pd('m', [2], [3, 4]), revision: 3 });
    expect(d.prefillPool('a.pd')).toBe(prefill);
    expect(prefill?.replicas.map((r) => r.id)).toEqual(['http://h:2']);
    expect(d.pool('m')?.replicas[0].prefill).toBe(prefill);

    // Without a Ready prefill replica the decode replicas cannot answer.
    d.apply({ kind: 'put', key: 'a.pd', value: pd('m', [2], [3, 4], { 2: 'Starting' }), revision: 4 });
    expect(d.pool('m')?.replicas.map((r) => r.id)).toEqual(['http://h:5']);
    expect([d.pool('m')?.prefillReady, d.pool('m')?.prefillDesired]).toEqual([0, 1]);

    d.apply({ kind: 'delete', key: 'a.pd', revision: 5 });
    expect(d.prefillPool('a.pd')).toBeUndefined();
    d.close();
  });

  it('moves a prefill pool with its deployment to another model name', () => {
    const d = directory();
    d.apply({ kind: 'put', key: 'a.pd', value: pd('m', [1], [2]), revision: 1 });
    const before = d.prefillPool('a.pd');
    d.apply({ kind: 'put', key: 'a.pd', value: pd('n', [1], [2]), revision: 2 });
    const after = d.prefillPool('a.pd');
    expect(after).not.toBe(before);
    expect(after?.model).toBe('n');
    expect(d.pool('n')?.replicas[0].prefill).toBe(after);
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
