import { effectiveLoad, kvSaturated } from '../engine-load';
import type { ReplicaView, RouteRequest } from '../replica';
import type { RoutingPolicy } from './routing-policy';

/** Least loaded (see leastLoaded); ties rotate so equal replicas take turns. */
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
 * The non-ejected replica with the least load. A replica whose engine reported its KV cache
 * saturated (≥ KV_CACHE_SATURATED) is heavier than any that is not: it is about to preempt.
 * Then the lowest `effectiveLoad` (this router's in-flight count plus other routers' requests
 * seen in the engine's metrics). Ties go to fewer requests waiting in the engine, then to lower
 * KV cache usage, then to the first one from position `start`, so a caller rotating `start`
 * spreads ties.
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
  const saturatedA = kvSaturated(a);
  if (saturatedA !== kvSaturated(b)) return !saturatedA;
  const loadA = effectiveLoad(a);
  const loadB = effectiveLoad(b);
  if (loadA !== loadB) return loadA < loadB;
  const waitingA = a.engineLoad?.waiting ?? 0;
  const waitingB = b.engineLoad?.waiting ?? 0;
  if (waitingA !== waitingB) return waitingA < waitingB;
  return (a.engineLoad?.kvCacheUsage ?? 0) < (b.engineLoad?.kvCacheUsage ?? 0);
}
