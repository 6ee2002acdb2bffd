import { SessionAffinityPolicy } from './session-affinity';
import { replicas } from './__fixtures__/replicas';
import type { ReplicaView } from '../replica';

function assign(policy: SessionAffinityPolicy, set: readonly ReplicaView[], sessions: number): Map<string, string> {
  const out = new Map<string, string>();
  for (let s = 0; s < sessions; s++) {
    const key = `session-${s}`;
    out.set(key, policy.pick({ model: 'm', text: '', sessionKey: key }, set)!.id);
  }
  return out;
}

describe('session', () => {
  it('sends a session to the same replica every time, whatever the load', () => {
    const policy = new SessionAffinityPolicy();
    const first = policy.pick({ model: 'm', text: '', sessionKey: 'user-42' }, replicas(4))!.id;
    const busy = replicas(4, { [Number(first.slice(1))]: { inFlight: 500 } });
    expect(policy.pick({ model: 'm', text: 'other', sessionKey: 'user-42' }, busy)!.id).toBe(first);
    // A fresh instance (another router replica) agrees: nothing is remembered.
    expect(new SessionAffinityPolicy().pick({ model: 'm', text: '', sessionKey: 'user-42' }, [...replicas(4)].reverse())!.id).toBe(first);
  });

  it('spreads sessions evenly', () => {
    const counts = new Map<string, number>();
    for (const id of assign(new SessionAffinityPolicy(), replicas(5), 20_000).values()) counts.set(id, (counts.get(id) ?? 0) + 1);
    for (const count of counts.values()) expect(Math.abs(count - 4_000)).toBeLessThan(300);
  });

  it('moves only the sessions of a replica that leaves, and spreads them over the rest', () => {
    const policy = new SessionAffinityPolicy();
    const before = assign(policy, replicas(5), 10_000);
    const after = assign(policy, replicas(5).filter((r) => r.id !== 'r2'), 10_000);
    const movedTo = new Map<string, number>();
    for (const [key, id] of before) {
      if (id !== 'r2') expect(after.get(key)).toBe(id);
      else movedTo.set(after.get(key)!, (movedTo.get(after.get(key)!) ?? 0) + 1);
    }
    expect([...movedTo.keys()].sort()).toEqual(['r0', 'r1', 'r3', 'r4']);
  });

  it('gives a joining replica about 1/n of the sessions, taking nothing else', () => {
    const policy = new SessionAffinityPolicy();
    const before = assign(policy, replicas(4), 10_000);
    const after = assign(policy, replicas(5), 10_000);
    let moved = 0;
    for (const [key, id] of before) {
      if (after.get(key) !== id) {
        moved++;
        expect(after.get(key)).toBe('r4');
      }
    }
    expect(moved / 10_000).toBeGreaterThan(0.17);
    expect(moved / 10_000).toBeLessThan(0.23);
  });

  it('treats an ejected replica like a departed one and takes its sessions back after', () => {
    const policy = new SessionAffinityPolicy();
    const home = policy.pick({ model: 'm', text: '', sessionKey: 'k' }, replicas(3))!.id;
    const ejected = replicas(3).map((r) => ({ ...r, ejected: r.id === home }));
    expect(policy.pick({ model: 'm', text: '', sessionKey: 'k' }, ejected)!.id).not.toBe(home);
    expect(policy.pick({ model: 'm', text: '', sessionKey: 'k' }, replicas(3))!.id).toBe(home);
  });

  it('falls back to least_request without a key', () => {
    const policy = new SessionAffinityPolicy();
    const set = replicas(3, { 0: { inFlight: 3 }, 1: { inFlight: 0 }, 2: { inFlight: 5 } });
    expect(policy.pick({ model: 'm', text: '' }, set)!.id).toBe('r1');
    expect(policy.pick({ model: 'm', text: '', sessionKey: '' }, set)!.id).toBe('r1');
    expect(policy.pick({ model: 'm', text: '', sessionKey: 'k' }, replicas(2, { 0: { ejected: true }, 1: { ejected: true } }))).toBeUndefined();
  });
});
