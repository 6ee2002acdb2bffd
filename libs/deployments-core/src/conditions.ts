import type { Condition, ReplicaStatus } from '@gpufleet/contracts';

/** A condition with its last transition kept when its status did not change. */
export function condition(previous: readonly Condition[] | undefined, type: string, status: boolean, reason: string, message: string, now: Date): Condition {
  const before = previous?.find((c) => c.type === type);
  const lastTransition = before && before.status === status && before.lastTransition ? before.lastTransition : now;
  return { type, status, reason, message, lastTransition };
}

/** The tokens the node runtime starts a pod's message with while its weights are not usable (node-runtime-core's PodPlanError reasons). */
const WEIGHTS_PENDING = 'WEIGHTS_PENDING: ';
const WEIGHTS_FAILED = 'WEIGHTS_FAILED: ';

/**
 * `WeightsReady` of a deployment that names an artifact: False while a replica's node downloads
 * it (reason `Downloading`, the first such replica's progress) or could not fetch it
 * (`FetchFailed`, the copy's reason); True once no placed replica waits for weights.
 */
export function weightsReadyCondition(
  previous: readonly Condition[] | undefined,
  artifact: string,
  replicas: ReadonlyArray<Pick<ReplicaStatus, 'role' | 'ordinal' | 'node' | 'state' | 'message'>>,
  now: Date,
): Condition {
  const about = (r: (typeof replicas)[number], token: string): string => {
    const text = r.message.slice(r.message.indexOf(token) + token.length);
    return `${r.role} ${r.ordinal}${r.node ? ` on ${r.node}` : ''}: ${text}`;
  };
  const failed = replicas.find((r) => r.state !== 'Terminating' && r.message.includes(WEIGHTS_FAILED));
  if (failed) return condition(previous, 'WeightsReady', false, 'FetchFailed', about(failed, WEIGHTS_FAILED), now);
  const waiting = replicas.find((r) => r.state !== 'Terminating' && r.message.includes(WEIGHTS_PENDING));
  if (waiting) return condition(previous, 'WeightsReady', false, 'Downloading', about(waiting, WEIGHTS_PENDING), now);
  return condition(previous, 'WeightsReady', true, 'Ready', `artifact ${artifact} is Ready on the nodes of every started replica`, now);
}
