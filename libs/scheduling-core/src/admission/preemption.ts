/**
 * Choosing victims to admit a pending workload, Kueue's way:
 *   - within its ClusterQueue (withinClusterQueue LOWER_PRIORITY): admitted workloads of lower priority;
 *   - reclaim within the cohort (reclaimWithinCohort ANY or LOWER_PRIORITY): admitted workloads of
 *     other members that borrow, when the preemptor would stay within its own nominal quota.
 * Candidates are ordered: other queues' first (take back what was lent before hurting one's own
 * queue), then lowest priority, then most recently admitted. Victims are taken greedily until
 * the workload fits quota and devices; then each victim but the last is given back, newest
 * choice first, if the workload still fits without it: the set is minimal.
 *
 * The Placer has no hypothetical mode, so the simulation uses it for real: a candidate is
 * released, `tryPlace` asks whether the preemptor fits, and a candidate given back is
 * re-committed with its own placements (valid again: nothing else changed since its release).
 * When no victim set works, every candidate is re-committed and the Placer is as it was.
 */
import type { ClusterQueue, PodPlacement } from '@gpufleet/contracts';
import { PreemptionPolicy } from '@gpufleet/contracts';
import type { PlacementFailure, PlacementRequest, Placer } from '../placer';
import type { QueueManager } from '../queues/queue-manager';
import type { WorkloadRecord } from './workload-record';

export interface PreemptionContext {
  readonly placer: Placer;
  readonly queues: QueueManager;
  /** Admitted (confirmed) workloads of a ClusterQueue; in-flight ones are never victims. */
  admittedIn(clusterQueue: string): Iterable<WorkloadRecord>;
}

export interface PreemptionPlan {
  readonly victims: readonly WorkloadRecord[];
  /** Where the preemptor goes once the victims are gone (victims are already released in the Placer). */
  readonly placements: PodPlacement[];
}

export interface NoPreemption {
  /** How many workloads the policies allowed to evict (0: preemption was not an option). */
  readonly candidates: number;
  /** The Placer's answer with every candidate gone, when quota would have fit. */
  readonly placementFailure: PlacementFailure | undefined;
}

export function planPreemption(
  context: PreemptionContext,
  preemptor: WorkloadRecord,
  clusterQueue: ClusterQueue,
  request: PlacementRequest,
  /** Whether quota is short (any victim may help) or only devices (victims of the same pool only). */
  quotaShort: boolean,
): PreemptionPlan | NoPreemption {
  const { placer, queues } = context;
  const candidates = collectCandidates(context, preemptor, clusterQueue, quotaShort);
  if (candidates.length === 0) return { candidates: 0, placementFailure: undefined };

  const freed = new Map<string, number>();
  const free = (v: WorkloadRecord, sign: 1 | -1): void => {
    freed.set(v.clusterQueue, (freed.get(v.clusterQueue) ?? 0) + sign * v.credits);
  };
  let placementFailure: PlacementFailure | undefined;
  const fits = (): boolean => {
    if (!queues.checkQuota(preemptor.clusterQueue, preemptor.credits, freed).fits) return false;
    const outcome = placer.tryPlace(request);
    if (!outcome.ok) placementFailure = outcome;
    return outcome.ok;
  };

  const removed: WorkloadRecord[] = [];
  let fitted = false;
  for (const candidate of candidates) {
    // Reclaim stops at what a lender is owed: a queue no longer borrowing keeps the rest.
    if (candidate.clusterQueue !== preemptor.clusterQueue && !queues.isBorrowing(candidate.clusterQueue, freed)) continue;
    placer.release(candidate.key);
    free(candidate, 1);
    removed.push(candidate);
    if (fits()) {
      fitted = true;
      break;
    }
  }
  if (!fitted) {
    for (let i = removed.length - 1; i >= 0; i--) placer.commit(removed[i].key, removed[i].placements);
    return { candidates: candidates.length, placementFailure };
  }

  const victims = new Set(removed);
  for (let i = removed.length - 2; i >= 0; i--) {
    const v = removed[i];
    placer.commit(v.key, v.placements);
    free(v, -1);
    if (fits()) {
      victims.delete(v);
    } else {
      placer.release(v.key);
      free(v, 1);
    }
  }
  const final = placer.tryPlace(request);
  if (!final.ok) {
    // Cannot happen with a deterministic Placer (this state fitted before); undo rather than guess.
    for (const v of victims) placer.commit(v.key, v.placements);
    return { candidates: candidates.length, placementFailure: final };
  }
  return { victims: [...victims], placements: final.placements };
}

function collectCandidates(context: PreemptionContext, preemptor: WorkloadRecord, cq: ClusterQueue, quotaShort: boolean): WorkloadRecord[] {
  const { queues } = context;
  const candidates: WorkloadRecord[] = [];
  const usable = (v: WorkloadRecord): boolean => quotaShort || v.pool === preemptor.pool;
  if (cq.withinClusterQueue === PreemptionPolicy.PREEMPTION_POLICY_LOWER_PRIORITY) {
    for (const v of context.admittedIn(cq.name)) if (v.priority < preemptor.priority && usable(v)) candidates.push(v);
  }
  const reclaim = cq.reclaimWithinCohort;
  // Reclaiming is for getting back one's own nominal quota, not for borrowing at others' expense.
  if (cq.cohort !== '' && reclaim !== PreemptionPolicy.PREEMPTION_POLICY_NEVER && queues.borrowedAfter(cq.name, preemptor.credits) === 0) {
    for (const member of queues.cohortMembers(cq.name)) {
      if (member === cq.name || !queues.isBorrowing(member)) continue;
      for (const v of context.admittedIn(member)) {
        if ((reclaim === PreemptionPolicy.PREEMPTION_POLICY_ANY || v.priority < preemptor.priority) && usable(v)) candidates.push(v);
      }
    }
  }
  const own = preemptor.clusterQueue;
  return candidates.sort(
    (a, b) =>
      Number(a.clusterQueue === own) - Number(b.clusterQueue === own) || a.priority - b.priority || b.status.admissionSequence - a.status.admissionSequence,
  );
}

export function isPlan(result: PreemptionPlan | NoPreemption): result is PreemptionPlan {
  return 'victims' in result;
}
