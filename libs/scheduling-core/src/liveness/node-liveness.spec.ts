import { NodePhase } from '@gpufleet/contracts';
import { NodeLiveness } from './node-liveness';

describe('NodeLiveness', () => {
  const T = 45_000;

  it('a node that misses heartbeats for the timeout turns NotReady', () => {
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

  it('a beat brings it back: a NotReady node is Ready with its next heartbeat', () => {
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

  const T0 = Date.parse('2026-11-29T09:00:00Z');

  it('a new node is Ready for a full timeout before its first heartbeat', () => {
    const l = new NodeLiveness(T);
    const status = l.track('n1', T0, true);
    expect(status).toMatchObject({ phase: NodePhase.NODE_PHASE_READY, reason: 'Registered', lastTransition: new Date(T0) });
    expect(status.message).toBe('agent heartbeats arrive (last heartbeat 2026-11-29T09:00:00.000Z)');
    expect(l.sweep(T0 + T)).toEqual([]);
    expect(l.sweep(T0 + T + 1).map((t) => t.node)).toEqual(['n1']);
  });

  it('a node waiting for its first heartbeat says so, and has no last heartbeat', () => {
    const l = new NodeLiveness(T);
    const status = l.track('n1', T0, false);
    expect(status).toMatchObject({ phase: NodePhase.NODE_PHASE_NOT_READY, reason: 'AwaitingHeartbeat', lastHeartbeat: undefined });
    expect(status.message).toBe('no heartbeat for more than 45 s (no heartbeat received yet); capacity withdrawn');
    expect(l.lastHeartbeat('n1')).toBeUndefined();
    expect(l.sweep(T0 + 10 * T)).toEqual([]); // already NotReady: nothing to report
  });

  it('tracking a known node again (its record changed) keeps its phase and heartbeat', () => {
    const l = new NodeLiveness(T);
    l.track('n1', T0, true);
    l.beat('n1', T0 + 1_000);
    expect(l.track('n1', T0 + 2_000, false)).toMatchObject({ phase: NodePhase.NODE_PHASE_READY, reason: 'HeartbeatReceived', lastHeartbeat: new Date(T0 + 1_000) });
    l.sweep(T0 + 1_000 + T + 1);
    expect(l.track('n1', T0 + 100_000, true)).toMatchObject({ phase: NodePhase.NODE_PHASE_NOT_READY, reason: 'HeartbeatMissed' });
  });

  it('the last heartbeat is the receipt time of the latest beat', () => {
    const l = new NodeLiveness(T);
    l.track('n1', T0, false);
    l.beat('n1', T0 + 5);
    l.beat('n1', T0 + 9);
    expect(l.lastHeartbeat('n1')).toEqual(new Date(T0 + 9));
    expect(l.lastHeartbeat('ghost')).toBeUndefined();
  });

  it('grace after the scheduler\'s own reconnect never brings back a NotReady node, nor shortens a grace', () => {
    const l = new NodeLiveness(T);
    l.track('down', T0, false);
    l.track('up', T0, true);
    l.beat('up', T0 + 30_000);
    l.graceAll(T0 + 10_000); // earlier than the last beat: the beat counts
    expect(l.sweep(T0 + 30_000 + T)).toEqual([]);
    expect(l.phaseOf('down')).toBe(NodePhase.NODE_PHASE_NOT_READY);
    expect(l.sweep(T0 + 30_000 + T + 1).map((t) => t.node)).toEqual(['up']);
  });

  it('a forgotten node (its record was deleted) is no longer swept and its beats are ignored; tracked again it starts over', () => {
    const l = new NodeLiveness(T);
    l.track('n1', T0, true);
    l.forget('n1');
    expect(l.phaseOf('n1')).toBeUndefined();
    expect(l.sweep(T0 + T + 1)).toEqual([]);
    expect(l.beat('n1', T0 + T + 2)).toBeUndefined();
    expect(l.track('n1', T0 + T + 3, false).reason).toBe('AwaitingHeartbeat');
  });

  it('every late node is reported by one sweep, each once', () => {
    const l = new NodeLiveness(T);
    for (const n of ['n1', 'n2', 'n3']) l.track(n, T0, true);
    l.beat('n2', T0 + 20_000);
    expect(l.sweep(T0 + T + 1).map((t) => t.node)).toEqual(['n1', 'n3']);
    expect(l.sweep(T0 + 20_000 + T + 1).map((t) => t.node)).toEqual(['n2']);
  });
});
