/**
 * The admission controller's view of one workload: its spec, where it queues, what it costs,
 * what happened at its last attempt, and its status as published.
 */
import { PodPlacement, PodSet, Workload, WorkloadPhase, WorkloadSpec, WorkloadStatus } from '@gpufleet/contracts';
import type { PlacementFailure, WorkloadKey } from '../placer';
import type { ValidationProblem } from '../validation/problems';

export type GateName = 'Validation' | 'Quota' | 'DeviceFit' | 'Placement';
export const GATES: readonly GateName[] = ['Validation', 'Quota', 'DeviceFit', 'Placement'];

/** Pending (queued), reserved (quota and devices held, ledger write in flight), admitted, finished. */
export type WorkloadState = 'pending' | 'reserved' | 'admitted' | 'finished';

/** Where a pending workload sits in its ClusterQueue's PendingQueue. */
export type QueueSlot = 'ready' | 'quota' | 'devices' | 'config';

/** Why the last attempt stopped, and the state it was judged against (to skip it until that changes). */
export interface FailedAttempt {
  readonly gate: GateName;
  readonly reason: string;
  readonly message: string;
  /** When the attempt was made (the cycle's `now`). */
  readonly at: Date;
  /** Queue objects and pool shapes revision at the attempt. */
  readonly configRevision: number;
  /** The pool's device epoch at the attempt (DeviceFit and Placement failures). */
  readonly deviceEpoch: number;
  /** Retry at the next cycle whatever changed (ledger conflicts, requeued after preemption). */
  readonly retryNow: boolean;
}

export class WorkloadRecord {
  state: WorkloadState = 'pending';
  slot: QueueSlot | undefined;
  /** Bumped whenever the workload moves in its PendingQueue; entries with an older ticket are stale. */
  ticket = 0;
  /** Device epoch when parked on devices. */
  parkedAtEpoch = 0;
  credits = 0;
  problems: readonly ValidationProblem[] = [];
  /** Config revision the problems and credits were computed at. */
  validatedAt = -1;
  failure: FailedAttempt | undefined;
  /** The last failed tryPlace of this workload: its largest free block is what explainPending shows. */
  lastPlacementFailure: PlacementFailure | undefined;
  placements: PodPlacement[] = [];
  /** Requests with equal signatures fit or fail alike on the same free devices. */
  readonly signature: string;

  constructor(
    readonly key: WorkloadKey,
    readonly spec: WorkloadSpec,
    public clusterQueue: string,
    public pool: string,
    /** Admission order among equal priorities: submission order. */
    readonly sequence: number,
    readonly status: WorkloadStatus,
  ) {
    this.signature = requestSignature(spec.podSets);
  }

  get priority(): number {
    return this.spec.priority;
  }

  /** A copy fit to publish or store: status copied, spec shared (treat both as read-only). */
  snapshot(): Workload {
    return { spec: this.spec, status: { ...this.status, credits: this.credits, placements: this.placements } };
  }

  setPhase(phase: WorkloadPhase): void {
    this.status.phase = phase;
  }
}

/** Priority first (higher first), then submission order: the order a ClusterQueue admits in. */
export function admissionOrder(a: WorkloadRecord, b: WorkloadRecord): boolean {
  return a.priority !== b.priority ? a.priority > b.priority : a.sequence < b.sequence;
}

/** The parts of pod sets that decide device fit (names do not). */
function requestSignature(podSets: readonly PodSet[]): string {
  return podSets
    .map((p) => {
      const r = p.resources;
      const a = r?.accelerator;
      const accel = a
        ? `${a.whole ?? ''}|${a.sharedTokens ?? ''}|${a.slice ? `${a.slice.memoryMib ?? ''}/${a.slice.memoryPercent ?? ''}/${a.slice.coresPercent}` : ''}|${a.partitionProfile ?? ''}`
        : '-';
      return `${p.count}x${p.size}:${accel}:${r?.vcpu ?? 0}:${r?.memoryMib ?? 0}:${p.topology?.requiredLevel ?? ''}/${p.topology?.preferredLevel ?? ''}`;
    })
    .join(';');
}

export function emptyStatus(): WorkloadStatus {
  return {
    phase: WorkloadPhase.WORKLOAD_PHASE_PENDING,
    clusterQueue: '',
    pool: '',
    credits: 0,
    placements: [],
    pending: undefined,
    submittedAt: undefined,
    admittedAt: undefined,
    finishedAt: undefined,
    finishReason: '',
    admissionSequence: 0,
  };
}
