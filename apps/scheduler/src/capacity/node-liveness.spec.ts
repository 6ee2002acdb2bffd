import { NodePhase } from '@gpufleet/contracts';
import { NodeLiveness } from './node-liveness';

describe('NodeLiveness', () => {
  const T = 45_000;

  it('a node that misses heartbeats for longer than the timeout turns NotReady', () => {
    const l = new NodeLiveness(T);
    l.track('n1', 0, true);
    l.beat('n1', 15_000);
    expect(l.sweep(15_000 + T)).toEqual([]);
    const [t] = l.sweep(15_000 + T + 1);
    expect(t.node).toBe('n1');
    expect(t.status.phase).toBe(NodePhase.NODE_PHASE_NOT_READY);
    expect(t.status.reason).toBe('HeartbeatMissed');
    expect(t.status.message).toMatch(/no heartbeat for more than 45 s/);
    expect(l.sweep(200_000)).toEqual([]); // reported once
  });

  it('a NotReady node comes back with its next heartbeat', () => {
    const l = new NodeLiveness(T);
    l.track('n1', 0, true);
    l.sweep(T + 1);
    const back = l.beat('n1', T + 2);
    expect(back?.status.phase).toBe(NodePhase.NODE_PHASE_READY);
    expect(back?.status.reason).toBe('HeartbeatResumed');
    expect(l.beat('n1', T + 3)).toBeUndefined();
  });

  it('a node known NotReady before a scheduler restart waits for a heartbeat', () => {
    const l = new NodeLiveness(T);
    expect(l.track('n1', 0, false).phase).toBe(NodePhase.NODE_PHASE_NOT_READY);
    expect(l.beat('n1', 10)?.status.phase).toBe(NodePhase.NODE_PHASE_READY);
  });

  it('after the scheduler\'s own outage every Ready node gets a fresh grace period', () => {
    const l = new NodeLiveness(T);
    l.track('n1', 0, true);
    l.graceAll(40_000);
    expect(l.sweep(T + 1)).toEqual([]);
    expect(l.sweep(40_000 + T + 1)).toHaveLength(1);
  });

  it('heartbeats from nodes it does not track are ignored', () => {
    const l = new NodeLiveness(T);
    expect(l.beat('ghost', 1)).toBeUndefined();
    expect(l.phaseOf('ghost')).toBeUndefined();
  });
});
