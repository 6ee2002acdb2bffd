import {
  podLogsPath,
  type PodRuntimeStatus,
  type ReplicaStatus,
  type Workload,
  WorkloadPhase,
} from '@gpufleet/contracts';

/** A node's readiness as the scheduler sees it. */
export interface NodeView {
  ready: boolean;
  /** When it last changed phase (for NotReady: since when). */
  since?: Date;
  /**
   * Why placement keeps off the node although it is Ready (the kubernetes runtime: a cordoned
   * Node); undefined when it does not.
   */
  cordoned?: string;
}

export interface RecoveryPolicy {
  now: number;
  /** How long work on a NotReady node waits before it is placed elsewhere. */
  rescheduleAfterMs: number;
}

/** What became of an owned workload, from its status, its node and its pods' runtime records. */
export type OwnedState =
  | { kind: 'pending'; message: string }
  | { kind: 'finished'; message: string }
  | { kind: 'lost'; node: string; message: string; moveNow: boolean }
  | { kind: 'running'; node: string; state: 'Starting' | 'Ready' | 'Restarting' | 'Failed'; message: string; pod0?: PodRuntimeStatus; restarts: number };

/** The first gate the workload failed, as its pending explanation says. */
function pendingMessage(w: Workload): string {
  const gate = w.status?.pending?.gates.find((g) => !g.passed);
  if (gate) return `${gate.gate}: ${gate.message || gate.reason}`;
  return w.status?.phase === WorkloadPhase.WORKLOAD_PHASE_QUOTA_RESERVED ? 'quota reserved, being placed' : 'waiting for admission';
}

export function ownedState(w: Workload, pods: readonly PodRuntimeStatus[], nodeOf: (name: string) => NodeView | undefined, policy: RecoveryPolicy): OwnedState {
  const phase = w.status?.phase;
  if (phase === WorkloadPhase.WORKLOAD_PHASE_FINISHED) return { kind: 'finished', message: `its workload finished (${w.status?.finishReason || 'unknown reason'})` };
  if (phase !== WorkloadPhase.WORKLOAD_PHASE_ADMITTED) return { kind: 'pending', message: pendingMessage(w) };
  const placements = w.status?.placements ?? [];
  const nodes = [...new Set(placements.map((p) => p.node))];
  for (const name of nodes) {
    const node = nodeOf(name);
    if (node && !node.ready) {
      const since = node.since?.getTime() ?? policy.now;
      const waited = policy.now - since;
      const moveNow = waited >= policy.rescheduleAfterMs;
      const left = Math.max(0, Math.ceil((policy.rescheduleAfterMs - waited) / 1000));
      return {
        kind: 'lost',
        node: name,
        moveNow,
        message: moveNow
          ? `node ${name} is NotReady since ${new Date(since).toISOString()}; moving to another node`
          : `node ${name} is NotReady since ${new Date(since).toISOString()}; moved elsewhere in ${left}s unless it returns`,
      };
    }
  }
  // A drained node (cordoned, its pods evicted: the runtime does not start them again there):
  // the work moves now, as `kubectl drain` means.
  for (const name of nodes) {
    const cordoned = nodeOf(name)?.cordoned;
    if (cordoned && !pods.some((p) => p.node === name)) {
      return { kind: 'lost', node: name, moveNow: true, message: `node ${name} is drained (${cordoned}) and the pod there is gone; moving to another node` };
    }
  }
  const node = placements[0]?.node ?? '';
  const expected = placements.length;
  const pod0 = pods.find((p) => p.pod === 0 && p.replica === 0) ?? pods[0];
  const restarts = pods.reduce((n, p) => n + p.restarts, 0);
  if (pods.length === 0) return { kind: 'running', node, state: 'Starting', message: `waiting for the node runtime on ${node}`, restarts };
  const failed = pods.find((p) => p.state === 'Failed');
  if (failed) return { kind: 'running', node, state: 'Failed', message: failed.message || failed.lastExit || 'its process failed', pod0, restarts };
  const backoff = pods.find((p) => p.state === 'Backoff');
  if (backoff) {
    return { kind: 'running', node, state: 'Restarting', message: `restarting after it ${backoff.lastExit || 'exited'} (restart ${backoff.restarts})`, pod0, restarts };
  }
  const ready = pods.filter((p) => p.state === 'Ready').length;
  if (ready === expected) return { kind: 'running', node, state: 'Ready', message: '', pod0, restarts };
  return { kind: 'running', node, state: 'Starting', message: `${ready}/${expected} pods ready${pod0?.message ? `: ${pod0.message}` : ''}`, pod0, restarts };
}

export function endpointOf(pod: PodRuntimeStatus | undefined): string {
  return pod && pod.port > 0 ? `http://${hostForUrl(pod.host)}:${pod.port}` : '';
}

export function logsUrlOf(pod: PodRuntimeStatus | undefined): string {
  if (!pod || !pod.runtimeUrl) return '';
  return `${pod.runtimeUrl}${podLogsPath({ namespace: pod.namespace, workload: pod.workload, podSet: pod.podSet, replica: pod.replica, pod: pod.pod })}`;
}

function hostForUrl(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/** ReplicaStatus.state for an owned state. */
export function replicaState(s: OwnedState): ReplicaStatus['state'] {
  switch (s.kind) {
    case 'pending':
      return 'Pending';
    case 'finished':
      return 'Terminating';
    case 'lost':
      return 'Lost';
    case 'running':
      return s.state;
  }
}
