/**
 * Admission of workloads into pools: the chain Validation → Quota (credits) → DeviceFit →
 * Placement, preemption when quota or devices are short, and the bookkeeping of what each
 * admitted workload holds. Framework-free and synchronous; the scheduler app drives it:
 *
 *   submit / finish / delete         from the workload API
 *   cycle(now)                       on a timer or after changes; returns decisions
 *   confirmAdmission / abortAdmission after writing each admit decision to the devices ledger
 *
 * An admit decision already holds quota and devices here (the Placer's mirror), so later
 * decisions of the same cycle see them; an abort gives both back and requeues the workload.
 * Nothing is ever dropped: a workload that cannot be admitted stays pending with the reason.
 *
 * Work per cycle follows what changed: each ClusterQueue keeps a heap of candidates and parks
 * workloads that failed until their cause may have gone (see PendingQueue); a StrictFIFO queue
 * whose head still fails for the same reason costs O(1); a placement failure is remembered per
 * request shape until the pool frees devices, so identical workloads do not ask the Placer again.
 */
import { ClusterQueue, PendingExplanation, PodPlacement, Workload, workloadKey, WorkloadPhase, WorkloadSpec } from '@gpufleet/contracts';
import type { Packing, PlacementRequest, Placer, WorkloadKey } from '../placer';
import { workloadCredits } from '../queues/credits';
import { QueueError } from '../queues/errors';
import type { QueueManager } from '../queues/queue-manager';
import type { PoolShape } from '../validation/pool-shape';
import { routeLocalQueue } from '../queues/default-queues';
import { describeProblems } from '../validation/problems';
import { LocalQueueResolution, validateWorkloadSpec, WorkloadValidationContext } from '../validation/workload-spec';
import {
  AdmissionCycleResult,
  AdmissionDecision,
  AdmitDecision,
  ConfirmResult,
  PreemptDecision,
  ReleaseResult,
  SubmitResult,
  WorkloadLifecycleEvent,
} from './decisions';
import { DeviceEpochs } from './device-epochs';
import { admittedGates, pendingGates } from './explain';
import { PendingQueue } from './pending-queue';
import { isPlan, planPreemption, PreemptionContext } from './preemption';
import { emptyStatus, FailedAttempt, GateName, QueueSlot, WorkloadRecord } from './workload-record';

export type CorrectionResult = { readonly ok: true; readonly workloads: Workload[] } | { readonly ok: false; readonly message: string };

export interface AdmissionControllerOptions {
  readonly placer: Placer;
  readonly queues: QueueManager;
  /** Pool shapes known at start; keep them current with setPoolShape / removePoolShape. */
  readonly pools?: Iterable<PoolShape>;
  readonly clock?: () => Date;
  /**
   * Nodes to try first for the workload's replicas (weight locality: where its model weights are
   * already cached). A preference only: it never decides whether a workload fits.
   */
  readonly preferredNodes?: (spec: WorkloadSpec) => readonly string[];
}

export interface CycleOptions {
  /** Stop after this many admissions (bounds the latency of one cycle). */
  readonly maxAdmissions?: number;
}

export interface RestoreOptions {
  /**
   * Commit admitted workloads' placements to the Placer (default true). Pass false when the
   * Placer's mirror was already loaded from the devices ledger.
   */
  readonly commitPlacements?: boolean;
}

export interface RestoreResult {
  readonly admitted: number;
  readonly pending: number;
  readonly finished: number;
  /** Inconsistencies found in the stored state; the workloads concerned were kept, never dropped. */
  readonly warnings: readonly string[];
}

type AttemptOutcome = { readonly admitted: true; readonly decisions: AdmissionDecision[] } | { readonly admitted: false; readonly gate: GateName };

export class AdmissionController {
  private readonly placer: Placer;
  private readonly preferredNodes: AdmissionControllerOptions['preferredNodes'];
  private readonly queues: QueueManager;
  private readonly clock: () => Date;
  private readonly workloads = new Map<WorkloadKey, WorkloadRecord>();
  private readonly pendingByQueue = new Map<string, PendingQueue>();
  /** Confirmed admissions per ClusterQueue: the preemption candidates. */
  private readonly admittedByQueue = new Map<string, Set<WorkloadRecord>>();
  /** Pending workloads (restored) whose LocalQueue leads to no ClusterQueue yet. */
  private readonly unqueued = new Set<WorkloadRecord>();
  private readonly poolShapes = new Map<string, PoolShape>();
  private poolShapeRevision = 0;
  private readonly devices = new DeviceEpochs();
  private lastUnqueuedCheck = -1;
  private nextSequence = 1;
  private lastAdmissionSequence = 0;
  private readonly validation: WorkloadValidationContext = { resolveLocalQueue: (ns, lq, pool) => this.resolveLocalQueue(ns, lq, pool) };
  private readonly preemption: PreemptionContext;

  constructor(options: AdmissionControllerOptions) {
    this.placer = options.placer;
    this.preferredNodes = options.preferredNodes;
    this.queues = options.queues;
    this.clock = options.clock ?? (() => new Date());
    for (const shape of options.pools ?? []) this.poolShapes.set(shape.name, shape);
    this.preemption = { placer: this.placer, queues: this.queues, admittedIn: (cq) => this.admittedByQueue.get(cq) ?? [] };
  }

  // ---- pools -----------------------------------------------------------------------------

  /** A pool's shape appeared or changed (nodes joined, left, or changed inventory). */
  setPoolShape(shape: PoolShape): void {
    this.poolShapes.set(shape.name, shape);
    this.poolShapeRevision++;
    this.capacityChanged(shape.name);
  }

  removePoolShape(pool: string): void {
    if (this.poolShapes.delete(pool)) this.poolShapeRevision++;
  }

  /** Devices of a pool may have been freed outside admission (a node turned Ready, the ledger was reloaded). */
  capacityChanged(pool: string): void {
    this.devices.advance(pool);
  }

  // ---- workload API ----------------------------------------------------------------------

  /** Validates and queues a workload. The spec is kept as given: treat it as read-only afterwards. */
  submit(spec: WorkloadSpec, now: Date = this.clock()): SubmitResult {
    const key = workloadKey(spec.namespace, spec.name);
    if (this.workloads.has(key)) {
      return { accepted: false, code: 'ALREADY_EXISTS', message: `ALREADY_EXISTS: workload ${key} exists; delete it first`, problems: [] };
    }
    const problems = validateWorkloadSpec(spec, this.validation);
    const target = this.resolveLocalQueue(spec.namespace, spec.localQueue, spec.pool || undefined);
    if (problems.length > 0 || !target.ok) {
      return { accepted: false, code: 'INVALID_ARGUMENT', message: `INVALID_ARGUMENT: workload ${key} is invalid: ${describeProblems(problems)}`, problems };
    }
    const status = { ...emptyStatus(), clusterQueue: target.clusterQueue, pool: target.pool.name, submittedAt: now };
    const record = new WorkloadRecord(key, spec, target.clusterQueue, target.pool.name, this.nextSequence++, status);
    record.credits = workloadCredits(spec, target.pool);
    record.validatedAt = this.configRevision();
    this.workloads.set(key, record);
    this.queues.trackLocalQueue(spec.namespace, spec.localQueue, 1);
    this.enqueue(record);
    const workload = record.snapshot();
    return { accepted: true, workload, events: [{ kind: 'submitted', workload, reason: '' }] };
  }

  /** The workload ended (e.g. "Completed", "Failed"); what it held is released. */
  finish(key: WorkloadKey, reason = 'Completed', now: Date = this.clock()): ReleaseResult {
    const record = this.mustGet(key);
    if (record.state === 'finished') {
      throw new QueueError('FAILED_PRECONDITION', `workload ${key} already finished (${record.status.finishReason})`);
    }
    return this.end(record, reason, now);
  }

  /** Finishes the workload with reason "Deleted" (unless it already finished) and forgets it. */
  delete(key: WorkloadKey, now: Date = this.clock()): ReleaseResult {
    const record = this.mustGet(key);
    const result = record.state === 'finished' ? { workload: record.snapshot(), releasedPlacements: [], events: [] } : this.end(record, 'Deleted', now);
    this.workloads.delete(key);
    return result;
  }

  getWorkload(key: WorkloadKey): Workload | undefined {
    return this.workloads.get(key)?.snapshot();
  }

  listWorkloads(): Workload[] {
    return [...this.workloads.values()].map((r) => r.snapshot());
  }

  // ---- admission cycle -------------------------------------------------------------------

  /**
   * One pass over the ClusterQueues. Candidates are the heads of every queue, taken in this
   * order (fair sharing):
   *   1. heads that fit their queue's nominal quota before any that must borrow;
   *   2. among borrowers, the lowest share first, share = credits the queue would borrow after
   *      admitting the head / its fairSharingWeight (0 or unset counts as 1);
   *   3. then higher priority, then earlier submission.
   * A head that fails is set aside (BestEffortFIFO) or blocks its queue (StrictFIFO) for the
   * rest of the cycle; the pass ends when no queue has a candidate left.
   */
  cycle(now: Date = this.clock(), options: CycleOptions = {}): AdmissionCycleResult {
    const revision = this.configRevision();
    if (revision !== this.lastUnqueuedCheck) this.requeueUnqueued(revision);
    const active = new Set<PendingQueue>();
    for (const [name, pq] of this.pendingByQueue) {
      const spec = this.queues.clusterQueueSpec(name);
      if (!spec) continue;
      pq.release(revision, this.deviceEpoch(spec.pool), () => this.queues.headroom(name));
      if (pq.head()) active.add(pq);
    }
    const decisions: AdmissionDecision[] = [];
    const maxAdmissions = options.maxAdmissions ?? Number.POSITIVE_INFINITY;
    let admissions = 0;
    let attempted = 0;
    while (admissions < maxAdmissions) {
      let best: { pq: PendingQueue; head: WorkloadRecord; spec: ClusterQueue } | undefined;
      for (const pq of active) {
        const head = pq.head();
        const spec = this.queues.clusterQueueSpec(pq.clusterQueue);
        if (!head || !spec) {
          active.delete(pq);
          continue;
        }
        if (this.stillFails(head, spec, revision)) {
          if (this.queues.isStrictFifo(spec.name)) active.delete(pq);
          else this.park(pq, head);
          continue;
        }
        if (!best || this.goesFirst(head, spec, best.head, best.spec)) best = { pq, head, spec };
      }
      if (!best) break;
      attempted++;
      const outcome = this.attempt(best.head, best.spec, now);
      if (outcome.admitted) {
        admissions++;
        for (const d of outcome.decisions) {
          decisions.push(d);
          // A victim is pending again: its queue may have become active.
          if (d.kind === 'preempt') {
            const victimQueue = this.pendingByQueue.get(this.mustGet(d.key).clusterQueue);
            if (victimQueue) active.add(victimQueue);
          }
        }
      } else if (this.queues.isStrictFifo(best.spec.name)) {
        active.delete(best.pq);
      } else {
        this.park(best.pq, best.head);
      }
    }
    return { decisions, attempted };
  }

  /** The caller wrote the admit decision's placements to the ledger: the workload is admitted. */
  confirmAdmission(key: WorkloadKey, placements?: readonly PodPlacement[], now: Date = this.clock()): ConfirmResult {
    const record = this.workloads.get(key);
    if (!record || record.state !== 'reserved') {
      return { ok: false, reason: 'NotReserved', message: `workload ${key} is not awaiting admission (${record ? record.state : 'unknown'}); remove its ledger entries` };
    }
    if (placements && placements !== record.placements && !samePlacements(placements, record.placements)) {
      return { ok: false, reason: 'PlacementsDiffer', message: `placements for ${key} differ from the admit decision; write the decision's placements` };
    }
    record.state = 'admitted';
    record.setPhase(WorkloadPhase.WORKLOAD_PHASE_ADMITTED);
    record.status.admittedAt = now;
    record.status.admissionSequence = ++this.lastAdmissionSequence;
    this.admittedSet(record.clusterQueue).add(record);
    const workload = record.snapshot();
    return { ok: true, workload, events: [{ kind: 'admitted', workload, reason: '' }] };
  }

  /**
   * Admitted workloads hold other devices than their placements say (the kubelet assigned them):
   * each gets `corrected` (workload key → its pods, all of them) instead, committed together so a
   * swap of two workloads' devices goes through. Quota and pods stay as they are; only which
   * devices changes. On any problem (not admitted, other pods, a device held by a workload outside
   * the set) nothing changes and the error says why.
   */
  correctPlacements(corrected: ReadonlyMap<WorkloadKey, readonly PodPlacement[]>): CorrectionResult {
    const records: WorkloadRecord[] = [];
    for (const [key, placements] of corrected) {
      const record = this.workloads.get(key);
      if (!record || record.state !== 'admitted') return { ok: false, message: `workload ${key} is not admitted (${record ? record.state : 'unknown'})` };
      const pods = (list: readonly PodPlacement[]): string => list.map((p) => `${p.node}/${p.podSet}/${p.replica}/${p.pod}`).sort().join(',');
      if (pods(placements) !== pods(record.placements)) return { ok: false, message: `the corrected placements of ${key} name other pods than it holds` };
      records.push(record);
    }
    for (const record of records) this.placer.release(record.key);
    const committed: WorkloadRecord[] = [];
    try {
      for (const record of records) {
        this.placer.commit(record.key, [...(corrected.get(record.key) ?? [])]);
        committed.push(record);
      }
    } catch (err) {
      for (const record of committed) this.placer.release(record.key);
      for (const record of records) this.placer.commit(record.key, record.placements);
      return { ok: false, message: (err as Error).message };
    }
    const workloads: Workload[] = [];
    for (const record of records) {
      record.placements = [...(corrected.get(record.key) ?? [])];
      this.capacityChanged(record.pool);
      workloads.push(record.snapshot());
    }
    return { ok: true, workloads };
  }

  /**
   * The ledger write of an admit decision failed (compare-and-set conflict): quota and devices
   * go back, and the workload is pending again at its place, retried at the next cycle.
   */
  abortAdmission(key: WorkloadKey, why: string): Workload {
    const record = this.workloads.get(key);
    if (!record || record.state !== 'reserved') {
      throw new QueueError('FAILED_PRECONDITION', `workload ${key} is not awaiting admission (${record ? record.state : 'unknown'})`);
    }
    this.releaseHoldings(record);
    record.state = 'pending';
    record.setPhase(WorkloadPhase.WORKLOAD_PHASE_PENDING);
    record.failure = this.failure(record, 'Placement', 'LedgerConflict', `the devices ledger changed before the allocation was written (${why}); retrying`, true);
    this.enqueue(record);
    return record.snapshot();
  }

  // ---- explanations ----------------------------------------------------------------------

  /** Why the workload is not admitted yet: each gate, its queue position, the largest free block. */
  explainPending(key: WorkloadKey): PendingExplanation {
    const record = this.mustGet(key);
    const largestFreeBlock = record.lastPlacementFailure?.largestFreeBlock ?? '';
    if (record.state === 'finished') return { gates: [], queuePosition: 0, largestFreeBlock: '' };
    if (record.state !== 'pending') return { gates: admittedGates(record), queuePosition: 0, largestFreeBlock: '' };
    const pq = this.unqueued.has(record) ? undefined : this.pendingByQueue.get(record.clusterQueue);
    const position = pq ? pq.positionOf(record) : 0;
    const head = pq?.head();
    const gates = pendingGates(record, {
      position,
      strictFifo: this.queues.isStrictFifo(record.clusterQueue),
      head: head && head !== record ? head : undefined,
    });
    return { gates, queuePosition: position, largestFreeBlock };
  }

  // ---- restart ---------------------------------------------------------------------------

  /**
   * Rebuilds state from stored workloads after a restart or leader takeover; call once, on a
   * new controller, after the queue objects and pool shapes are loaded. Admitted workloads hold
   * their quota and placements again (even above a quota lowered meanwhile); pending ones are
   * requeued in their original order (submittedAt, then name). QUOTA_RESERVED workloads must be
   * settled against the ledger first: pass those whose entries the ledger holds as ADMITTED;
   * the others are requeued.
   */
  restore(workloads: readonly Workload[], options: RestoreOptions = {}): RestoreResult {
    if (this.workloads.size > 0) throw new QueueError('FAILED_PRECONDITION', 'restore needs a controller without workloads');
    const commit = options.commitPlacements ?? true;
    const warnings: string[] = [];
    let finished = 0;
    const live: { key: WorkloadKey; spec: WorkloadSpec; stored: Workload }[] = [];
    const seen = new Set<WorkloadKey>();
    for (const stored of workloads) {
      const spec = stored.spec;
      if (!spec) {
        warnings.push('a stored workload has no spec; skipped');
        continue;
      }
      const key = workloadKey(spec.namespace, spec.name);
      if (seen.has(key)) {
        warnings.push(`workload ${key} is stored twice; the first copy was kept`);
        continue;
      }
      seen.add(key);
      if (stored.status?.phase === WorkloadPhase.WORKLOAD_PHASE_FINISHED) {
        const record = new WorkloadRecord(key, spec, stored.status.clusterQueue, stored.status.pool, 0, { ...emptyStatus(), ...stored.status });
        record.state = 'finished';
        record.credits = stored.status.credits;
        this.workloads.set(key, record);
        finished++;
      } else {
        live.push({ key, spec, stored });
      }
    }
    // Sequences follow submission, admitted ones included: one preempted later requeues at its original place.
    const time = (w: Workload): number => w.status?.submittedAt?.getTime() ?? 0;
    live.sort((a, b) => time(a.stored) - time(b.stored) || a.key.localeCompare(b.key));
    let admitted = 0;
    for (const { key, spec, stored } of live) {
      if (stored.status?.phase === WorkloadPhase.WORKLOAD_PHASE_ADMITTED) {
        this.restoreAdmitted(key, spec, stored, commit, warnings);
        admitted++;
      } else {
        this.restorePending(key, spec, stored);
      }
    }
    return { admitted, pending: live.length - admitted, finished, warnings };
  }

  // ---- internals: the gates ------------------------------------------------------------

  private attempt(record: WorkloadRecord, cq: ClusterQueue, now: Date): AttemptOutcome {
    const revision = this.configRevision();
    if (record.validatedAt !== revision) this.revalidate(record, revision);
    if (record.problems.length > 0) {
      return this.fail(record, 'Validation', 'InvalidWorkload', describeProblems(record.problems), now);
    }
    const preferredNodes = this.preferredNodes?.(record.spec) ?? [];
    const request: PlacementRequest = { key: record.key, pool: record.pool, podSets: record.spec.podSets, packing: cq.packing as Packing, ...(preferredNodes.length > 0 ? { preferredNodes } : {}) };

    const quota = this.queues.checkQuota(cq.name, record.credits);
    if (!quota.fits) {
      // Above the ceiling no eviction can help: it is a configuration problem, said as such.
      const plan = quota.reason === 'ExceedsQuotaCeiling' ? undefined : planPreemption(this.preemption, record, cq, request, true);
      if (plan && isPlan(plan)) return this.admit(record, plan.placements, plan.victims);
      const why = plan && plan.candidates > 0 ? `; evicting all ${plan.candidates} workloads the preemption policies allow would not make room` : '';
      return this.fail(record, 'Quota', quota.reason, `${quota.message}${why}`, now);
    }

    const shape = cq.packing === 'spread' ? `spread|${record.signature}` : record.signature;
    const cached = this.devices.failureOf(record.pool, shape);
    const outcome = cached ?? this.placer.tryPlace(request);
    if (outcome.ok) return this.admit(record, outcome.placements, []);
    record.lastPlacementFailure = outcome;
    if (!cached) this.devices.remember(record.pool, shape, outcome);
    if (outcome.reason !== 'PoolUnavailable') {
      const plan = planPreemption(this.preemption, record, cq, request, false);
      if (isPlan(plan)) return this.admit(record, plan.placements, plan.victims);
    }
    const gate: GateName = outcome.reason === 'TopologyUnsatisfiable' ? 'Placement' : 'DeviceFit';
    return this.fail(record, gate, outcome.reason, outcome.message, now);
  }

  private admit(record: WorkloadRecord, placements: PodPlacement[], victims: readonly WorkloadRecord[]): AttemptOutcome {
    const decisions: AdmissionDecision[] = victims.map((v) => this.evict(v, record));
    this.queues.reserve(record.clusterQueue, record.credits);
    this.placer.commit(record.key, placements);
    this.pendingByQueue.get(record.clusterQueue)?.remove(record);
    this.queues.trackPending(record.clusterQueue, -1);
    record.state = 'reserved';
    record.placements = placements;
    record.failure = undefined;
    record.setPhase(WorkloadPhase.WORKLOAD_PHASE_QUOTA_RESERVED);
    const workload = record.snapshot();
    const admit: AdmitDecision = {
      kind: 'admit',
      key: record.key,
      clusterQueue: record.clusterQueue,
      pool: record.pool,
      credits: record.credits,
      placements,
      workload,
      preempted: victims.map((v) => v.key),
      events: [{ kind: 'quota_reserved', workload, reason: '' }],
    };
    decisions.push(admit);
    return { admitted: true, decisions };
  }

  /** A victim chosen by planPreemption: already released in the Placer; give back quota, requeue. */
  private evict(victim: WorkloadRecord, preemptor: WorkloadRecord): PreemptDecision {
    const released = victim.placements;
    this.admittedByQueue.get(victim.clusterQueue)?.delete(victim);
    this.queues.release(victim.clusterQueue, victim.credits);
    this.capacityChanged(victim.pool);
    const reason =
      victim.clusterQueue === preemptor.clusterQueue
        ? `preempted by ${preemptor.key} (priority ${preemptor.priority} > ${victim.priority}) within ClusterQueue ${JSON.stringify(victim.clusterQueue)}`
        : `preempted by ${preemptor.key}: ClusterQueue ${JSON.stringify(preemptor.clusterQueue)} reclaims quota lent to ${JSON.stringify(victim.clusterQueue)} in cohort ${JSON.stringify(
            this.queues.clusterQueueSpec(preemptor.clusterQueue)?.cohort ?? '',
          )}`;
    victim.state = 'pending';
    victim.placements = [];
    victim.setPhase(WorkloadPhase.WORKLOAD_PHASE_PENDING);
    victim.status.admittedAt = undefined;
    victim.status.admissionSequence = 0;
    victim.failure = this.failure(victim, 'Quota', 'Preempted', `${reason}; waiting to be admitted again`, true);
    this.enqueue(victim);
    const workload = victim.snapshot();
    return { kind: 'preempt', key: victim.key, preemptor: preemptor.key, releasedPlacements: released, workload, events: [{ kind: 'preempted', workload, reason }] };
  }

  private fail(record: WorkloadRecord, gate: GateName, reason: string, message: string, now: Date): AttemptOutcome {
    record.failure = this.failure(record, gate, reason, message, false, now);
    return { admitted: false, gate };
  }

  private failure(record: WorkloadRecord, gate: GateName, reason: string, message: string, retryNow: boolean, at: Date = this.clock()): FailedAttempt {
    return { gate, reason, message, at, configRevision: this.configRevision(), deviceEpoch: this.deviceEpoch(record.pool), retryNow };
  }

  /** Whether the head's last failure still holds, so trying again would only fail again. */
  private stillFails(record: WorkloadRecord, cq: ClusterQueue, revision: number): boolean {
    const f = record.failure;
    if (!f || f.retryNow || f.configRevision !== revision) return false;
    switch (f.gate) {
      case 'Validation':
        return true;
      case 'Quota':
        return record.credits > this.queues.headroom(cq.name);
      default:
        return f.deviceEpoch === this.deviceEpoch(cq.pool);
    }
  }

  private park(pq: PendingQueue, record: WorkloadRecord): void {
    const gate = record.failure?.gate ?? 'Quota';
    const slot: Exclude<QueueSlot, 'ready'> = gate === 'Validation' ? 'config' : gate === 'Quota' ? 'quota' : 'devices';
    pq.park(record, slot, this.deviceEpoch(record.pool));
  }

  /** Fair-sharing order of two candidate heads (see `cycle`). */
  private goesFirst(a: WorkloadRecord, aq: ClusterQueue, b: WorkloadRecord, bq: ClusterQueue): boolean {
    const aBorrow = this.queues.borrowedAfter(aq.name, a.credits);
    const bBorrow = this.queues.borrowedAfter(bq.name, b.credits);
    if ((aBorrow > 0) !== (bBorrow > 0)) return aBorrow === 0;
    if (aBorrow > 0) {
      const aShare = aBorrow / aq.fairSharingWeight;
      const bShare = bBorrow / bq.fairSharingWeight;
      if (aShare !== bShare) return aShare < bShare;
    }
    if (a.priority !== b.priority) return a.priority > b.priority;
    return a.sequence < b.sequence;
  }

  // ---- internals: bookkeeping ------------------------------------------------------------

  private configRevision(): number {
    return this.queues.revision + this.poolShapeRevision;
  }

  private deviceEpoch(pool: string): number {
    return this.devices.epoch(pool);
  }

  private mustGet(key: WorkloadKey): WorkloadRecord {
    const record = this.workloads.get(key);
    if (!record) throw new QueueError('NOT_FOUND', `workload ${key} does not exist`);
    return record;
  }

  private admittedSet(cq: string): Set<WorkloadRecord> {
    let set = this.admittedByQueue.get(cq);
    if (!set) {
      set = new Set();
      this.admittedByQueue.set(cq, set);
    }
    return set;
  }

  private enqueue(record: WorkloadRecord): void {
    let pq = this.pendingByQueue.get(record.clusterQueue);
    if (!pq) {
      pq = new PendingQueue(record.clusterQueue);
      this.pendingByQueue.set(record.clusterQueue, pq);
    }
    pq.add(record);
    this.queues.trackPending(record.clusterQueue, 1);
  }

  /** Gives back quota and devices of a reserved or admitted workload. */
  private releaseHoldings(record: WorkloadRecord): PodPlacement[] {
    const released = record.placements;
    this.placer.release(record.key);
    if (this.queues.hasClusterQueue(record.clusterQueue)) this.queues.release(record.clusterQueue, record.credits);
    this.admittedByQueue.get(record.clusterQueue)?.delete(record);
    this.capacityChanged(record.pool);
    record.placements = [];
    return released;
  }

  private end(record: WorkloadRecord, reason: string, now: Date): ReleaseResult {
    let released: PodPlacement[] = [];
    if (record.state === 'pending') {
      if (this.unqueued.delete(record)) {
        // never counted as pending in a ClusterQueue
      } else {
        this.queues.trackPending(record.clusterQueue, -1);
      }
      this.pendingByQueue.get(record.clusterQueue)?.remove(record);
    } else {
      released = this.releaseHoldings(record);
    }
    this.queues.trackLocalQueue(record.spec.namespace, record.spec.localQueue, -1);
    record.state = 'finished';
    record.setPhase(WorkloadPhase.WORKLOAD_PHASE_FINISHED);
    record.status.finishedAt = now;
    record.status.finishReason = reason;
    const workload = record.snapshot();
    const events: WorkloadLifecycleEvent[] = [{ kind: 'finished', workload, reason }];
    return { workload, releasedPlacements: released, events };
  }

  private resolveLocalQueue(namespace: string, localQueue: string, pool?: string): LocalQueueResolution {
    const lq = this.queues.getLocalQueue(namespace, localQueue);
    if (!lq) return { ok: false, expected: `an existing LocalQueue of namespace ${JSON.stringify(namespace)}`, got: JSON.stringify(localQueue) };
    const route = routeLocalQueue(lq, pool, { get: (name) => this.queues.clusterQueueSpec(name), all: () => this.queues.clusterQueueSpecs() });
    if (!route.ok) return route;
    const cq = route.clusterQueue;
    const shape = this.poolShapes.get(cq.pool);
    if (!shape) {
      return {
        ok: false,
        expected: 'a LocalQueue whose pool has nodes',
        got: `${JSON.stringify(localQueue)} → ClusterQueue ${JSON.stringify(cq.name)} → pool ${JSON.stringify(cq.pool)}, which has no nodes`,
      };
    }
    return { ok: true, clusterQueue: cq.name, pool: shape };
  }

  /** Queue objects or pool shapes changed: problems and credits are recomputed against them. */
  private revalidate(record: WorkloadRecord, revision: number): void {
    record.problems = validateWorkloadSpec(record.spec, this.validation);
    const target = this.resolveLocalQueue(record.spec.namespace, record.spec.localQueue, record.spec.pool || undefined);
    if (record.problems.length === 0 && target.ok) {
      record.pool = target.pool.name;
      record.status.pool = target.pool.name;
      record.credits = workloadCredits(record.spec, target.pool);
    }
    record.validatedAt = revision;
  }

  private restoreAdmitted(key: WorkloadKey, spec: WorkloadSpec, w: Workload, commit: boolean, warnings: string[]): void {
    const stored = w.status ?? emptyStatus();
    const target = this.resolveLocalQueue(spec.namespace, spec.localQueue, spec.pool || undefined);
    const cq = stored.clusterQueue !== '' ? stored.clusterQueue : target.ok ? target.clusterQueue : '';
    const pool = stored.pool !== '' ? stored.pool : target.ok ? target.pool.name : '';
    const record = new WorkloadRecord(key, spec, cq, pool, this.nextSequence++, { ...emptyStatus(), ...stored, clusterQueue: cq, pool });
    record.state = 'admitted';
    record.placements = stored.placements ?? [];
    const shape = this.poolShapes.get(pool);
    record.credits = stored.credits > 0 ? stored.credits : shape ? safeCredits(spec, shape) : 0;
    record.validatedAt = this.configRevision();
    this.workloads.set(key, record);
    this.queues.trackLocalQueue(spec.namespace, spec.localQueue, 1);
    if (commit) this.placer.commit(key, record.placements);
    this.lastAdmissionSequence = Math.max(this.lastAdmissionSequence, stored.admissionSequence);
    if (this.queues.hasClusterQueue(cq)) {
      this.queues.reserve(cq, record.credits);
      this.admittedSet(cq).add(record);
    } else {
      warnings.push(`admitted workload ${key} names ClusterQueue ${JSON.stringify(cq)}, which does not exist: its devices stay held but its ${record.credits} credits are not counted`);
    }
  }

  private restorePending(key: WorkloadKey, spec: WorkloadSpec, w: Workload): void {
    const stored = w.status ?? emptyStatus();
    const target = this.resolveLocalQueue(spec.namespace, spec.localQueue, spec.pool || undefined);
    const cq = target.ok ? target.clusterQueue : this.queues.hasClusterQueue(stored.clusterQueue) ? stored.clusterQueue : '';
    const pool = target.ok ? target.pool.name : stored.pool;
    const status = { ...emptyStatus(), submittedAt: stored.submittedAt, clusterQueue: cq, pool };
    const record = new WorkloadRecord(key, spec, cq, pool, this.nextSequence++, status);
    this.workloads.set(key, record);
    this.queues.trackLocalQueue(spec.namespace, spec.localQueue, 1);
    this.revalidate(record, this.configRevision());
    if (record.problems.length > 0) record.failure = this.failure(record, 'Validation', 'InvalidWorkload', describeProblems(record.problems), false);
    if (cq === '') {
      this.unqueued.add(record);
      record.slot = undefined;
    } else {
      this.enqueue(record);
    }
  }

  /** Restored workloads whose queue was missing: queue them once their LocalQueue resolves. */
  private requeueUnqueued(revision: number): void {
    this.lastUnqueuedCheck = revision;
    for (const record of this.unqueued) {
      const target = this.resolveLocalQueue(record.spec.namespace, record.spec.localQueue, record.spec.pool || undefined);
      if (!target.ok) continue;
      this.unqueued.delete(record);
      record.clusterQueue = target.clusterQueue;
      record.status.clusterQueue = target.clusterQueue;
      record.validatedAt = -1;
      this.enqueue(record);
    }
  }
}

function safeCredits(spec: WorkloadSpec, pool: PoolShape): number {
  try {
    return workloadCredits(spec, pool);
  } catch {
    return 0;
  }
}

function samePlacements(a: readonly PodPlacement[], b: readonly PodPlacement[]): boolean {
  if (a.length !== b.length) return false;
  const key = (p: PodPlacement): string =>
    `${p.podSet}/${p.replica}/${p.pod}@${p.node}:${p.acceleratorIds.join(',')}:${p.sharedTokens}:${p.sliceMemoryMib}:${p.sliceCoresPercent}:${p.partition?.acceleratorId ?? ''}/${p.partition?.profile ?? ''}/${p.partition?.start ?? ''}`;
  const keys = new Set(a.map(key));
  return b.every((p) => keys.has(key(p)));
}

