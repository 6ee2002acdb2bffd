import { LeastRequestPolicy } from '../policies/least-request';
import { RoundRobinPolicy } from '../policies/round-robin';
import { SessionAffinityPolicy } from '../policies/session-affinity';
import { replicas } from '../policies/__fixtures__/replicas';
import { isRetriable, RetryPlan } from './retry-plan';

const request = { model: 'm', text: 'hello' };

describe('RetryPlan', () => {
  it('retries a failure before the first byte on a replica not yet tried', () => {
    const plan = new RetryPlan(new LeastRequestPolicy(), request);
    const set = replicas(3, { 0: { inFlight: 0 }, 1: { inFlight: 1 }, 2: { inFlight: 2 } });
    expect(plan.first(set)?.id).toBe('r0');
    // r0 still looks idlest: it must not come back.
    expect(plan.afterFailure({ replicaId: 'r0', afterFirstByte: false }, set)).toEqual({ retry: true, replica: set[1] });
    expect(plan.afterFailure({ replicaId: 'r1', afterFirstByte: false }, set)).toEqual({ retry: true, replica: set[2] });
    // Three attempts by default, the first included.
    expect(plan.afterFailure({ replicaId: 'r2', afterFirstByte: false }, replicas(4))).toEqual({ retry: false, reason: 'attempts_exhausted' });
    expect(plan.triedReplicas).toEqual(['r0', 'r1', 'r2']);
  });

  it('does not retry once the response has started', () => {
    const plan = new RetryPlan(new RoundRobinPolicy(), request);
    const set = replicas(3);
    const first = plan.first(set)!;
    expect(plan.afterFailure({ replicaId: first.id, afterFirstByte: true }, set)).toEqual({ retry: false, reason: 'response_started' });
    expect(isRetriable({ replicaId: 'x', afterFirstByte: true })).toBe(false);
  });

  it('stops when every replica has been tried or the rest are ejected', () => {
    const plan = new RetryPlan(new RoundRobinPolicy(), request, { maxAttempts: 5 });
    const set = replicas(3, { 2: { ejected: true } });
    const first = plan.first(set)!;
    const second = plan.afterFailure({ replicaId: first.id, afterFirstByte: false }, set);
    expect(second.retry).toBe(true);
    const secondId = second.retry ? second.replica.id : '';
    expect(plan.afterFailure({ replicaId: secondId, afterFirstByte: false }, set)).toEqual({ retry: false, reason: 'no_replica_left' });
    expect(plan.attempts).toBe(2);
  });

  it('bounds attempts, the first included', () => {
    const plan = new RetryPlan(new RoundRobinPolicy(), request, { maxAttempts: 1 });
    const set = replicas(3);
    plan.first(set);
    expect(plan.afterFailure({ replicaId: 'r0', afterFirstByte: false }, set)).toEqual({ retry: false, reason: 'attempts_exhausted' });
  });

  it('follows the policy for the next choice: a session goes to its second-ranked replica', () => {
    const policy = new SessionAffinityPolicy();
    const set = replicas(4);
    const keyed = { ...request, sessionKey: 'user-7' };
    const plan = new RetryPlan(policy, keyed);
    const home = plan.first(set)!;
    const next = plan.afterFailure({ replicaId: home.id, afterFirstByte: false }, set);
    // The replica the session would land on if its home were gone.
    expect(next).toEqual({ retry: true, replica: policy.pick(keyed, set.filter((r) => r.id !== home.id)) });
  });

  it('answers nothing for the first attempt when every replica is ejected, and refuses a second first()', () => {
    const plan = new RetryPlan(new RoundRobinPolicy(), request);
    expect(plan.first(replicas(2, { 0: { ejected: true }, 1: { ejected: true } }))).toBeUndefined();
    plan.first(replicas(2));
    expect(() => plan.first(replicas(2))).toThrow('RetryPlan.first called twice');
  });

  it('validates maxAttempts', () => {
    expect(() => new RetryPlan(new RoundRobinPolicy(), request, { maxAttempts: 0 })).toThrow('retry.maxAttempts: expected an integer from 1 to 10, got 0');
  });
});
