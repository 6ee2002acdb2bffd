import type { PodPlacement, Workload } from '@gpufleet/contracts';
import type { WorkloadKey } from '../placer';
import type { ValidationProblem } from '../validation/problems';

/** The lifecycle events admission produces; each maps to one `workloads.<kind>` subject. */
export type WorkloadEventKind = 'submitted' | 'quota_reserved' | 'admitted' | 'preempted' | 'finished';

/** An event to publish (payload `WorkloadEvent{cluster, workload, reason}`), in order. */
export interface WorkloadLifecycleEvent {
  readonly kind: WorkloadEventKind;
  /** Snapshot at the time of the event. */
  readonly workload: Workload;
  /** For preempted: who preempted it and why; for finished: the finish reason. */
  readonly reason: string;
}

/**
 * Quota is reserved and the devices are held in the Placer. The caller writes `placements` to
 * the devices ledger with compare-and-set, then calls `confirmAdmission` (or `abortAdmission`
 * when the write conflicts; the workload goes back to pending and is retried).
 */
export interface AdmitDecision {
  readonly kind: 'admit';
  readonly key: WorkloadKey;
  readonly clusterQueue: string;
  readonly pool: string;
  readonly credits: number;
  readonly placements: PodPlacement[];
  /** Phase QUOTA_RESERVED. */
  readonly workload: Workload;
  /** Workloads preempted to make room (their `preempt` decisions come first in the cycle). */
  readonly preempted: readonly WorkloadKey[];
  readonly events: readonly WorkloadLifecycleEvent[];
}

/**
 * An admitted workload was evicted to admit `preemptor`: its quota and devices are already
 * released here, and it is pending again. The caller removes `releasedPlacements` from the
 * ledger (retrying on conflict: removal is idempotent) and stores the workload.
 */
export interface PreemptDecision {
  readonly kind: 'preempt';
  readonly key: WorkloadKey;
  readonly preemptor: WorkloadKey;
  readonly releasedPlacements: PodPlacement[];
  /** Phase PENDING, requeued at its original position. */
  readonly workload: Workload;
  readonly events: readonly WorkloadLifecycleEvent[];
}

export type AdmissionDecision = AdmitDecision | PreemptDecision;

export interface AdmissionCycleResult {
  /** In the order to apply them: a preemption precedes the admission it makes room for. */
  readonly decisions: AdmissionDecision[];
  /** Workloads whose gates were evaluated this cycle (skipped, still-blocked ones are not). */
  readonly attempted: number;
}

export type SubmitResult =
  | { readonly accepted: true; readonly workload: Workload; readonly events: readonly WorkloadLifecycleEvent[] }
  | {
      readonly accepted: false;
      /** "INVALID_ARGUMENT" (see problems) or "ALREADY_EXISTS". */
      readonly code: 'INVALID_ARGUMENT' | 'ALREADY_EXISTS';
      /** A sentence naming every problem. */
      readonly message: string;
      readonly problems: readonly ValidationProblem[];
    };

/** What finish/delete released; the caller removes `releasedPlacements` from the ledger. */
export interface ReleaseResult {
  readonly workload: Workload;
  /** Empty when the workload held nothing (it was pending). */
  readonly releasedPlacements: PodPlacement[];
  readonly events: readonly WorkloadLifecycleEvent[];
}

export type ConfirmResult =
  | { readonly ok: true; readonly workload: Workload; readonly events: readonly WorkloadLifecycleEvent[] }
  /** Not awaiting confirmation (finished or deleted meanwhile): the caller undoes its ledger write. */
  | { readonly ok: false; readonly reason: 'NotReserved' | 'PlacementsDiffer'; readonly message: string };
