import { LeastRequestPolicy, leastLoaded } from './least-request';
import { RoundRobinPolicy } from './round-robin';
import { replicas } from './__fixtures__/replicas';

const request = { model: 'm', text: 'hello' };

describe('round_robin', () => {
  it('takes each replica in turn', () => {
    const policy = new RoundRobinPolicy();
    const set = replicas(3);
    expect(Array.from({ length: 6 }, () => policy.pick(request, set)?.id)).toEqual(['r0', 'r1', 'r2', 'r0', 'r1', 'r2']);
  });

  it('skips ejected replicas and ignores load', () => {
    const policy = new RoundRobinPolicy();
    const set = replicas(3, { 0: { inFlight: 100 }, 1: { ejected: true } });
    expect(Array.from({ length: 4 }, () => policy.pick(request, set)?.id)).toEqual(['r0', 'r2', 'r0', 'r2']);
  });

  it('picks nothing when every replica is ejected or there are none', () => {
    const policy = new RoundRobinPolicy();
    expect(policy.pick(request, replicas(2, { 0: { ejected: true }, 1: { ejected: true } }))).toBeUndefined();
    expect(policy.pick(request, [])).toBeUndefined();
  });

  it('keeps going when the replica list shrinks under its cursor', () => {
    const policy = new RoundRobinPolicy();
    policy.pick(request, replicas(5));
    policy.pick(request, replicas(5));
    policy.pick(request, replicas(5)); // cursor now 3
    expect(policy.pick(request, replicas(2))?.id).toBe('r1');
  });
});

describe('least_request', () => {
  it('picks the replica with the fewest requests in flight', () => {
    const policy = new LeastRequestPolicy();
    expect(policy.pick(request, replicas(3, { 0: { inFlight: 4 }, 1: { inFlight: 1 }, 2: { inFlight: 2 } }))?.id).toBe('r1');
  });

  it('skips ejected replicas however idle', () => {
    const policy = new LeastRequestPolicy();
    expect(policy.pick(request, replicas(2, { 0: { ejected: true }, 1: { inFlight: 9 } }))?.id).toBe('r1');
    expect(policy.pick(request, replicas(1, { 0: { ejected: true } }))).toBeUndefined();
  });

  it('counts the requests other routers have on a replica, seen in its engine’s metrics', () => {
    const policy = new LeastRequestPolicy();
    // r0 has 1 request from this router, but its engine runs 6 and queues 2: 7 are someone else's.
    const set = replicas(3, {
      0: { inFlight: 1, engineLoad: { running: 6, waiting: 2, inFlightAtSample: 1 } },
      1: { inFlight: 3 },
      2: { inFlight: 2, engineLoad: { running: 4, waiting: 0, inFlightAtSample: 2 } },
    });
    expect(Array.from({ length: 3 }, () => policy.pick(request, set)?.id)).toEqual(['r1', 'r1', 'r1']);
  });

  it('uses only its own in-flight counts without a sample (never polled, failing or stale)', () => {
    const policy = new LeastRequestPolicy();
    expect(policy.pick(request, replicas(2, { 0: { inFlight: 1 }, 1: { inFlight: 3 } }))?.id).toBe('r0');
  });

  it('does not count its own requests twice', () => {
    const set = replicas(2, { 0: { inFlight: 2, engineLoad: { running: 2, waiting: 0, inFlightAtSample: 2 } }, 1: { inFlight: 3 } });
    expect(leastLoaded(set)?.id).toBe('r0');
  });

  it('treats a replica whose KV cache is saturated as heavier than any other', () => {
    const full = { running: 1, waiting: 0, kvCacheUsage: 0.99, inFlightAtSample: 0 };
    expect(leastLoaded(replicas(2, { 0: { engineLoad: full }, 1: { inFlight: 20 } }))?.id).toBe('r1');
    // Both saturated: load decides again.
    expect(leastLoaded(replicas(2, { 0: { engineLoad: full }, 1: { inFlight: 20, engineLoad: { ...full, inFlightAtSample: 20 } } }))?.id).toBe('r0');
  });

  it('breaks ties by requests waiting in the engine, then KV cache usage', () => {
    const sample = (running: number, waiting: number, kvCacheUsage: number) => ({ engineLoad: { running, waiting, kvCacheUsage, inFlightAtSample: 0 } });
    // Load 2 each: r1 has more running and fewer waiting.
    expect(leastLoaded(replicas(2, { 0: sample(1, 1, 0.1), 1: sample(2, 0, 0.5) }))?.id).toBe('r1');
    expect(leastLoaded(replicas(3, { 0: sample(2, 0, 0.9), 1: sample(1, 1, 0.1), 2: sample(2, 0, 0.2) }))?.id).toBe('r2');
  });

  it('spreads exact ties round robin', () => {
    const policy = new LeastRequestPolicy();
    const set = replicas(3);
    const picked = Array.from({ length: 6 }, () => policy.pick(request, set)?.id);
    expect(new Set(picked.slice(0, 3)).size).toBe(3);
    expect(picked.slice(3)).toEqual(picked.slice(0, 3));
  });
});
