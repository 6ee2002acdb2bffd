import type { Condition } from '@gpufleet/contracts';

/** A condition with its last transition kept when its status did not change. */
export function condition(previous: readonly Condition[] | undefined, type: string, status: boolean, reason: string, message: string, now: Date): Condition {
  const before = previous?.find((c) => c.type === type);
  const lastTransition = before && before.status === status && before.lastTransition ? before.lastTransition : now;
  return { type, status, reason, message, lastTransition };
}
