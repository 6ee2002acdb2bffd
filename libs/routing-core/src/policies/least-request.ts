import type { ReplicaView, RouteRequest } from '../replica';
import type { RoutingPolicy } from './routing-policy';

/** Fewest requests in flight; ties rotate so equal replicas take turns. */
export class LeastRequestPolicy implements RoutingPolicy {
  readonly name = 'least_request';
  private cursor = 0;

  pick(_request: RouteRequest, replicas: readonly ReplicaView[]): ReplicaView | undefined {
    this.cursor = (this.cursor + 1) % 0x7fffffff;
    return leastLoaded(replicas, this.cursor);
  }

  removeReplica(): void {
    // Keeps nothing per replica.
  }
}

/**
 * The non-ejected replica with the fewest requests in flight. Ties go to fewer requests queued
 * in the engine, then to lower KV cache usage (both from metrics, so older than `inFlight`),
 * then to the first one from position `start`, so a caller rotating `start` spreads ties.
 */
export function leastLoaded(replicas: readonly ReplicaView[], start = 0): ReplicaView | undefined {
  const n = replicas.length;
  let best: ReplicaView | undefined;
  for (let k = 0; k < n; k++) {
    const replica = replicas[(start + k) % n];
    if (!replica.ejected && (best === undefined || lighter(replica, best))) best = replica;
  }
  return best;
}

function lighter(a: ReplicaView, b: ReplicaView): boolean {
  if (a.inFlight !== b.inFlight) return a.inFlight < b.inFlight;
  const queuedA = a.queued ?? 0;
  const queuedB = b.queued ?? 0;
  if (queuedA !== queuedB) return queuedA < queuedB;
  return (a.kvCacheUsage ?? 0) < (b.kvCacheUsage ?? 0);
}
