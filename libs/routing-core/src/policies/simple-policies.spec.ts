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

  it('breaks ties by engine queue, then KV cache usage', () => {
    const set = replicas(3, { 0: { queued: 2 }, 1: { queued: 1, kvCacheUsage: 0.9 }, 2: { queued: 1, kvCacheUsage: 0.2 } });
    expect(leastLoaded(set)?.id).toBe('r2');
  });

  it('spreads exact ties round robin', () => {
    const policy = new LeastRequestPolicy();
    const set = replicas(3);
    const picked = Array.from({ length: 6 }, () => policy.pick(request, set)?.id);
    expect(new Set(picked.slice(0, 3)).size).toBe(3);
    expect(picked.slice(3)).toEqual(picked.slice(0, 3));
  });
});
