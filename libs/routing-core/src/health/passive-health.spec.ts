import { ManualClock } from './clock';
import { outcomeOfStatus, PassiveHealth } from './passive-health';

function setup(options = {}) {
  const clock = new ManualClock(1_000_000);
  return { clock, health: new PassiveHealth(options, clock) };
}

function fail(health: PassiveHealth, id: string, times: number, outcome: 'connect_error' | 'server_error' = 'connect_error'): void {
  for (let i = 0; i < times; i++) health.record(id, outcome);
}

describe('PassiveHealth', () => {
  it('ejects a replica after 3 consecutive connect errors or 5xx, for 5 s', () => {
    const { clock, health } = setup();
    health.record('r1', 'connect_error');
    health.record('r1', 'server_error');
    expect(health.isEjected('r1')).toBe(false);
    health.record('r1', 'connect_error');
    expect(health.health('r1')).toEqual({ state: 'ejected', consecutiveFailures: 0, ejections: 1, ejectedUntil: 1_005_000 });
    clock.advance(4_999);
    expect(health.isEjected('r1')).toBe(true);
    clock.advance(1);
    expect(health.isEjected('r1')).toBe(false);
    expect(health.health('r1').state).toBe('half_open');
  });

  it('forgets failures after a success: only consecutive ones count', () => {
    const { health } = setup();
    fail(health, 'r1', 2);
    health.record('r1', 'ok');
    fail(health, 'r1', 2);
    expect(health.isEjected('r1')).toBe(false);
    expect(health.health('r1').consecutiveFailures).toBe(2);
  });

  it('ignores cancelled attempts, which say nothing about the replica', () => {
    const { health } = setup();
    fail(health, 'r1', 2);
    health.record('r1', 'cancelled');
    health.record('r1', 'connect_error');
    expect(health.isEjected('r1')).toBe(true);
  });

  it('re-ejects a half-open replica on its first failure, doubling the cool-down up to the cap', () => {
    const { clock, health } = setup({ baseEjectionMs: 5_000, maxEjectionMs: 15_000 });
    fail(health, 'r1', 3);
    const cooldowns: number[] = [];
    for (let i = 0; i < 4; i++) {
      const until = health.health('r1').ejectedUntil!;
      cooldowns.push(until - clock.now());
      clock.advance(until - clock.now());
      expect(health.health('r1').state).toBe('half_open');
      health.record('r1', 'server_error');
    }
    expect(cooldowns).toEqual([5_000, 10_000, 15_000, 15_000]);
  });

  it('makes a half-open replica healthy again after one success', () => {
    const { clock, health } = setup();
    fail(health, 'r1', 3);
    clock.advance(5_000);
    health.record('r1', 'ok');
    expect(health.health('r1')).toEqual({ state: 'healthy', consecutiveFailures: 0, ejections: 0 });
    fail(health, 'r1', 3);
    expect(health.health('r1').ejectedUntil! - clock.now()).toBe(5_000); // back to the base cool-down
  });

  it('ignores answers that arrive while the replica is ejected', () => {
    const { clock, health } = setup();
    fail(health, 'r1', 3);
    health.record('r1', 'ok'); // a stream that started before the ejection
    fail(health, 'r1', 5);
    expect(health.health('r1')).toMatchObject({ state: 'ejected', ejections: 1, ejectedUntil: clock.now() + 5_000 });
  });

  it('keeps replicas apart and forgets removed ones', () => {
    const { health } = setup();
    fail(health, 'r1', 3);
    expect(health.isEjected('r2')).toBe(false);
    health.removeReplica('r1');
    expect(health.isEjected('r1')).toBe(false);
  });

  it('marks ejected replicas in the views it is given', () => {
    const { health } = setup();
    fail(health, 'r1', 3);
    const views = [
      { id: 'r1', inFlight: 0, ejected: false },
      { id: 'r2', inFlight: 1, ejected: false },
      { id: 'r3', inFlight: 1, ejected: true },
    ];
    expect(health.apply(views).map((v) => v.ejected)).toEqual([true, false, true]);
    expect(health.apply(views)[1]).toBe(views[1]);
  });

  it('classifies statuses: 5xx fail, everything else is an answer', () => {
    expect([200, 400, 429, 499, 500, 503].map(outcomeOfStatus)).toEqual(['ok', 'ok', 'ok', 'ok', 'server_error', 'server_error']);
  });

  it('validates its options, naming the field', () => {
    expect(() => new PassiveHealth({ consecutiveFailures: 0 })).toThrow('passiveHealth.consecutiveFailures: expected an integer ≥ 1, got 0');
    expect(() => new PassiveHealth({ baseEjectionMs: 10_000, maxEjectionMs: 5_000 })).toThrow(
      'passiveHealth.maxEjectionMs: expected an integer ≥ 10000, got 5000',
    );
  });
});
