import type { ReplicaView, RouteRequest } from '../replica';
import { hash32, mix32 } from './hash';
import { LeastRequestPolicy } from './least-request';
import type { RoutingPolicy } from './routing-policy';

/**
 * Session affinity by rendezvous (highest-random-weight) hashing: every replica scores the
 * session key and the highest score wins. A replica that leaves or is ejected moves only its own
 * sessions; one that joins takes about 1/n of them, from every replica evenly. No ring to
 * rebuild and nothing to remember, so every router replica agrees without talking.
 * Requests without a key are placed by least_request.
 */
export class SessionAffinityPolicy implements RoutingPolicy {
  readonly name = 'session';
  private readonly fallback = new LeastRequestPolicy();
  /** Replica id → its hash; ids are few and long-lived, so hash each once. */
  private readonly idHashes = new Map<string, number>();

  pick(request: RouteRequest, replicas: readonly ReplicaView[]): ReplicaView | undefined {
    if (request.sessionKey === undefined || request.sessionKey === '') return this.fallback.pick(request, replicas);
    const keyHash = hash32(request.sessionKey);
    let best: ReplicaView | undefined;
    let bestScore = -1;
    for (const replica of replicas) {
      if (replica.ejected) continue;
      const score = rendezvousScore(keyHash, this.idHash(replica.id));
      // Equal scores (1 in 2^32) go to the smaller id, so every router replica agrees.
      if (score > bestScore || (score === bestScore && best !== undefined && replica.id < best.id)) {
        best = replica;
        bestScore = score;
      }
    }
    return best;
  }

  removeReplica(replicaId: string): void {
    this.idHashes.delete(replicaId);
  }

  private idHash(id: string): number {
    let h = this.idHashes.get(id);
    if (h === undefined) {
      h = hash32(id);
      this.idHashes.set(id, h);
    }
    return h;
  }
}

/** The weight of a (session, replica) pair: the two hashes combined, then mixed again so scores for one key look independent. */
export function rendezvousScore(keyHash: number, replicaHash: number): number {
  return mix32((keyHash ^ Math.imul(replicaHash, 0x9e3779b1)) >>> 0);
}
