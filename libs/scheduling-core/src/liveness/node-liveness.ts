import { NodePhase, NodeStatus } from '@gpufleet/contracts';

export interface PhaseTransition {
  node: string;
  status: NodeStatus;
}

interface Tracked {
  lastHeartbeat: number; // ms since epoch, local clock
  phase: NodePhase;
  lastTransition: number;
}

/**
 * Decides Ready/NotReady from heartbeats. A node is Ready while beats arrive at most
 * `timeoutMs` apart; once a beat is that late it turns NotReady, and the next beat brings it
 * back. Times are the scheduler's own clock at receipt, so agents' clock skew does not matter.
 */
export class NodeLiveness {
  private readonly nodes = new Map<string, Tracked>();

  constructor(readonly timeoutMs: number) {}

  /**
   * Starts tracking a node. `assumeReady` gives it a full grace period (a new node, or one the
   * store says was Ready before this scheduler started); otherwise it waits for a heartbeat.
   */
  track(node: string, now: number, assumeReady: boolean): NodeStatus {
    const existing = this.nodes.get(node);
    if (existing) return this.statusOf(existing, existing.phase === NodePhase.NODE_PHASE_READY ? 'HeartbeatReceived' : 'HeartbeatMissed');
    const tracked: Tracked = {
      lastHeartbeat: assumeReady ? now : 0,
      phase: assumeReady ? NodePhase.NODE_PHASE_READY : NodePhase.NODE_PHASE_NOT_READY,
      lastTransition: now,
    };
    this.nodes.set(node, tracked);
    return this.statusOf(tracked, assumeReady ? 'Registered' : 'AwaitingHeartbeat');
  }

  forget(node: string): void {
    this.nodes.delete(node);
  }

  /** Restarts the grace period of every Ready node (e.g. after the scheduler's own outage). */
  graceAll(now: number): void {
    for (const tracked of this.nodes.values()) {
      if (tracked.phase === NodePhase.NODE_PHASE_READY) tracked.lastHeartbeat = Math.max(tracked.lastHeartbeat, now);
    }
  }

  /** Records a heartbeat; returns the transition when it brings a NotReady node back. */
  beat(node: string, now: number): PhaseTransition | undefined {
    const tracked = this.nodes.get(node);
    if (!tracked) return undefined;
    tracked.lastHeartbeat = now;
    if (tracked.phase === NodePhase.NODE_PHASE_READY) return undefined;
    tracked.phase = NodePhase.NODE_PHASE_READY;
    tracked.lastTransition = now;
    return { node, status: this.statusOf(tracked, 'HeartbeatResumed') };
  }

  /** Turns every node whose last beat is older than the timeout NotReady. */
  sweep(now: number): PhaseTransition[] {
    const out: PhaseTransition[] = [];
    for (const [node, tracked] of this.nodes) {
      if (tracked.phase === NodePhase.NODE_PHASE_READY && now - tracked.lastHeartbeat > this.timeoutMs) {
        tracked.phase = NodePhase.NODE_PHASE_NOT_READY;
        tracked.lastTransition = now;
        out.push({ node, status: this.statusOf(tracked, 'HeartbeatMissed') });
      }
    }
    return out;
  }

  /** Receipt time of the node's last heartbeat, when one arrived. */
  lastHeartbeat(node: string): Date | undefined {
    const t = this.nodes.get(node)?.lastHeartbeat;
    return t ? new Date(t) : undefined;
  }

  phaseOf(node: string): NodePhase | undefined {
    return this.nodes.get(node)?.phase;
  }

  private statusOf(t: Tracked, reason: string): NodeStatus {
    const ready = t.phase === NodePhase.NODE_PHASE_READY;
    const since = t.lastHeartbeat ? `last heartbeat ${new Date(t.lastHeartbeat).toISOString()}` : 'no heartbeat received yet';
    return {
      phase: t.phase,
      lastHeartbeat: t.lastHeartbeat ? new Date(t.lastHeartbeat) : undefined,
      lastTransition: new Date(t.lastTransition),
      reason,
      message: ready
        ? `agent heartbeats arrive (${since})`
        : `no heartbeat for more than ${Math.round(this.timeoutMs / 1000)} s (${since}); capacity withdrawn`,
    };
  }
}
