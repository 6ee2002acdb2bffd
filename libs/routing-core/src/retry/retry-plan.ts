import { checkInteger } from '../errors';
import type { ReplicaView, RouteRequest } from '../replica';
import type { RoutingPolicy } from '../policies/routing-policy';

/** A failed attempt, as the router saw it. */
export interface AttemptFailure {
  readonly replicaId: string;
  /**
   * Whether any byte of the replica's response had arrived. From then on the engine has run the
   * request and may have streamed tokens the client already holds: a retry could duplicate
   * output and bill twice, so only failures before the first byte (connection refused or reset,
   * timeout waiting for headers) move to another replica.
   */
  readonly afterFirstByte: boolean;
}

export interface RetryOptions {
  /** Attempts per request, the first included (1 disables retries). Default 3. */
  readonly maxAttempts?: number;
}

export type RetryRefusal = 'response_started' | 'attempts_exhausted' | 'no_replica_left';

export type RetryDecision =
  | { readonly retry: true; readonly replica: ReplicaView }
  | { readonly retry: false; readonly reason: RetryRefusal };

/** Whether a failure happened early enough to try another replica. */
export function isRetriable(failure: AttemptFailure): boolean {
  return !failure.afterFirstByte;
}

/**
 * The attempts of one request: the first replica from the policy, then after each failure
 * whether to try again and where, never on a replica already tried, at most maxAttempts in all.
 * Pass fresh replica views each time (in-flight counts and ejections move between attempts).
 */
export class RetryPlan {
  private readonly maxAttempts: number;
  private readonly tried = new Set<string>();

  constructor(
    private readonly policy: RoutingPolicy,
    private readonly request: RouteRequest,
    options: RetryOptions = {},
    field = 'retry',
  ) {
    this.maxAttempts = checkInteger(`${field}.maxAttempts`, options.maxAttempts ?? 3, 1, 10);
  }

  /** Attempts made so far (replicas picked). */
  get attempts(): number {
    return this.tried.size;
  }

  /** Replicas picked so far, in order. */
  get triedReplicas(): string[] {
    return [...this.tried];
  }

  /** The replica for the first attempt; undefined when no replica is available. */
  first(replicas: readonly ReplicaView[]): ReplicaView | undefined {
    if (this.tried.size > 0) throw new Error('RetryPlan.first called twice; use afterFailure for later attempts');
    return this.pickUntried(replicas);
  }

  /** After a failed attempt: the replica for the next one, or why there is none. */
  afterFailure(failure: AttemptFailure, replicas: readonly ReplicaView[]): RetryDecision {
    this.tried.add(failure.replicaId);
    if (!isRetriable(failure)) return { retry: false, reason: 'response_started' };
    if (this.tried.size >= this.maxAttempts) return { retry: false, reason: 'attempts_exhausted' };
    const replica = this.pickUntried(replicas);
    return replica === undefined ? { retry: false, reason: 'no_replica_left' } : { retry: true, replica };
  }

  private pickUntried(replicas: readonly ReplicaView[]): ReplicaView | undefined {
    const untried = this.tried.size === 0 ? replicas : replicas.filter((r) => !this.tried.has(r.id));
    const replica = this.policy.pick(this.request, untried);
    if (replica !== undefined) this.tried.add(replica.id);
    return replica;
  }
}
