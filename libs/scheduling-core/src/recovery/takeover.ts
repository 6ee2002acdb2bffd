/**
 * What a new leader does with the workload records and the devices ledger it finds. The ledger
 * is written first (ledger commit, then status write), so a leader that died in between left
 * records that lag the ledger; this decides, per workload, how to make them agree again.
 * Framework-free: the app carries out the plan (status writes, ledger removals, logs).
 */
import { NodeLedger, PodPlacement, Workload, WorkloadPhase, WorkloadSpec, WorkloadStatus, workloadKey } from '@gpufleet/contracts';
import type { WorkloadKey } from '../placer';
import { ledgerWorkloads } from '../ledger/ledger-edits';

export interface TakeoverView {
  /** Every stored workload record. */
  readonly workloads: Iterable<Workload>;
  /** Every node's devices ledger as stored. */
  readonly ledgers: Iterable<NodeLedger>;
  /** A workload's pods as the placement engine loaded them from those ledgers (`PlacementEngine.placementsOf`). */
  readonly placementsOf: (key: WorkloadKey) => PodPlacement[];
  /** admittedAt of a completed admission whose record has none. */
  readonly now: Date;
}

/** Ledger entries to remove: the workload's pods as loaded, and why. */
export interface LedgerRelease {
  key: WorkloadKey;
  placements: PodPlacement[];
  reason: string;
}

export type TakeoverDecision =
  /** The ledger holds all its pods but the Admitted status was not written: write it. */
  | { kind: 'complete'; key: WorkloadKey; workload: Workload; status: WorkloadStatus; reason: string }
  /** Recorded Admitted but the ledger holds none of its pods: Pending again, no placements. */
  | { kind: 'requeue'; key: WorkloadKey; workload: Workload; status: WorkloadStatus; reason: string }
  /** The ledger holds something of a workload that is not Admitted and cannot be completed: remove its entries. */
  | ({ kind: 'release'; workload: Workload } & LedgerRelease)
  /** Record and ledger agree. */
  | { kind: 'keep'; key: WorkloadKey; workload: Workload };

export interface TakeoverPlan {
  /** One per record with a spec and a status, in the order given. */
  decisions: TakeoverDecision[];
  /** Ledger entries of workloads without a record (with spec and status), in the order the ledgers name them. */
  orphans: LedgerRelease[];
  /** The records to restore into the admission controller, with the status each decision gives them. */
  restore: Workload[];
}

/**
 * The takeover reconciliation, per record (records without spec or status are skipped; their
 * ledger entries count as orphans):
 *
 * | the ledger holds | its status | decision |
 * | --- | --- | --- |
 * | no entry of it | Admitted | requeue |
 * | no entry of it | any other | keep |
 * | entries of it | Admitted | keep (even when only part of the gang) |
 * | exactly Σ count × size pods | neither Admitted nor Finished | complete |
 * | entries, any other number of pods | not Admitted | release |
 * | entries of it | Finished | release |
 */
export function planTakeover(view: TakeoverView): TakeoverPlan {
  const held = new Set<WorkloadKey>();
  for (const ledger of view.ledgers) ledgerWorkloads(ledger).forEach((k) => held.add(k));
  const decisions: TakeoverDecision[] = [];
  const restore: Workload[] = [];
  for (const workload of view.workloads) {
    const { spec, status } = workload;
    if (!spec || !status) continue;
    const decision = decide(workload, spec, status, held, view);
    held.delete(decision.key);
    decisions.push(decision);
    restore.push(decision.kind === 'complete' || decision.kind === 'requeue' ? { ...workload, status: decision.status } : workload);
  }
  const orphans = [...held].map((key) => ({ key, placements: view.placementsOf(key), reason: 'no such workload' }));
  return { decisions, orphans, restore };
}

function decide(workload: Workload, spec: WorkloadSpec, status: WorkloadStatus, held: ReadonlySet<WorkloadKey>, view: TakeoverView): TakeoverDecision {
  const key = workloadKey(spec.namespace, spec.name);
  const phase = status.phase;
  const admitted = phase === WorkloadPhase.WORKLOAD_PHASE_ADMITTED;
  if (!held.has(key)) {
    if (!admitted) return { kind: 'keep', key, workload };
    // Its devices left the ledger (preempted, then the leader died before recording it): it
    // holds nothing, so it waits again rather than claiming quota without devices.
    return {
      kind: 'requeue',
      key,
      workload,
      status: { ...status, phase: WorkloadPhase.WORKLOAD_PHASE_PENDING, placements: [], admittedAt: undefined },
      reason: 'recorded as admitted but the ledger holds none of its pods',
    };
  }
  if (admitted) return { kind: 'keep', key, workload };
  const placements = view.placementsOf(key);
  const expectedPods = spec.podSets.reduce((n, p) => n + p.count * p.size, 0); // pods of the whole gang
  if (phase !== WorkloadPhase.WORKLOAD_PHASE_FINISHED && placements.length === expectedPods) {
    return {
      kind: 'complete',
      key,
      workload,
      status: { ...status, phase: WorkloadPhase.WORKLOAD_PHASE_ADMITTED, placements, admittedAt: status.admittedAt ?? view.now },
      reason: 'the ledger holds it but its status was not written',
    };
  }
  return { kind: 'release', key, workload, placements, reason: `its status is ${phase} and the ledger holds ${placements.length}/${expectedPods} pods` };
}
