import type { ReplicaView, RouteRequest } from '../replica';
import type { RoutingPolicy } from './routing-policy';

/** Each non-ejected replica in turn, whatever its load. */
export class RoundRobinPolicy implements RoutingPolicy {
  readonly name = 'round_robin';
  private cursor = 0;

  pick(_request: RouteRequest, replicas: readonly ReplicaView[]): ReplicaView | undefined {
    const n = replicas.length;
    for (let k = 0; k < n; k++) {
      const at = (this.cursor + k) % n;
      if (!replicas[at].ejected) {
        this.cursor = (at + 1) % n;
        return replicas[at];
      }
    }
    return undefined;
  }

  removeReplica(): void {
    // Keeps nothing per replica: the cursor is a position in whatever list comes next.
  }
}
