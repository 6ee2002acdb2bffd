import type { ReplicaView, RouteRequest } from '../replica';

export const ROUTING_POLICY_NAMES = ['round_robin', 'least_request', 'session', 'cache_aware'] as const;
export type RoutingPolicyName = (typeof ROUTING_POLICY_NAMES)[number];

/**
 * Picks the replica for one request. One instance serves one deployment's replica set and may
 * keep state between picks (a cursor, a prefix tree); picks are synchronous so the router can
 * count the request in flight before the next pick.
 */
export interface RoutingPolicy {
  readonly name: RoutingPolicyName;
  /** A replica that is not ejected, or undefined when there is none. */
  pick(request: RouteRequest, replicas: readonly ReplicaView[]): ReplicaView | undefined;
  /** Forgets what the policy remembers about a replica that left the deployment. */
  removeReplica(replicaId: string): void;
}
