import type { FailedPodPlan, PodPlan, RunnablePodPlan } from './pod-plan';

/** A pod the runtime knows: running processes (with the launch digest they were started from), or a failed plan. */
export interface KnownPod {
  readonly key: string;
  /** `launch` of the plan it runs; undefined when it runs nothing because its plan failed. */
  readonly launch: string | undefined;
}

export interface PodChanges {
  /** Desired, not running: start. */
  readonly start: RunnablePodPlan[];
  /** Running with another launch (a new template, devices, keys): stop, then start with the same port. */
  readonly replace: RunnablePodPlan[];
  /** No longer desired: stop for good (processes, status record, directories). */
  readonly stop: string[];
  /** Desired but impossible to run now: stop its processes if any, keep its directories, report it Failed. */
  readonly fail: FailedPodPlan[];
}

/**
 * What to do to make the node run `plans`, given what it runs (`known`). Pure: the caller does
 * it. Failed plans are reported every time (the caller writes only what changed).
 */
export function diffPods(plans: readonly PodPlan[], known: readonly KnownPod[]): PodChanges {
  const current = new Map(known.map((k) => [k.key, k]));
  const wanted = new Set(plans.map((p) => p.key));
  const changes: PodChanges = { start: [], replace: [], stop: [], fail: [] };
  for (const plan of plans) {
    const running = current.get(plan.key);
    if (plan.kind === 'failed') changes.fail.push(plan);
    else if (running?.launch === undefined) changes.start.push(plan);
    else if (running.launch !== plan.launch) changes.replace.push(plan);
  }
  for (const k of known) if (!wanted.has(k.key)) changes.stop.push(k.key);
  return changes;
}
