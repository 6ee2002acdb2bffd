/**
 * The queue objects (ClusterQueues, LocalQueues, the cohorts they form) and their quota usage.
 * Framework-free and in memory: the scheduler loads it from the state store and applies the
 * admin API's changes to it; the AdmissionController reserves and releases credits through it.
 */
import { ClusterQueue, ClusterQueueUsage, Cohort, LocalQueue, QueueingStrategy, workloadKey } from '@gpufleet/contracts';
import { formatCount, problem } from '../validation/problems';
import { ceiling, headroom, QuotaTerms, quotaTerms, sharedUse } from './cohort-quota';
import { QueueError } from './errors';
import { ClusterQueueCheckOptions, normalizeClusterQueue, validateClusterQueue, validateLocalQueue } from './queue-objects';

/** A cohort, or the one-member group of a queue without a cohort; sums kept incrementally. */
interface CohortGroup {
  readonly name: string;
  readonly members: Set<ClusterQueueState>;
  /** Σ lendable */
  lendable: number;
  /** Σ shared use */
  shared: number;
}

interface ClusterQueueState {
  spec: ClusterQueue;
  terms: QuotaTerms;
  group: CohortGroup;
  /** Credits of admitted and being-admitted workloads. */
  usage: number;
  admittedWorkloads: number;
  pendingWorkloads: number;
}

/** Why a reservation does not fit, for the Quota gate. */
export type QuotaCheck =
  | { readonly fits: true; /** credits above nominal after the reservation */ readonly borrowed: number }
  | {
      readonly fits: false;
      /** "QuotaExceeded" (nothing left now), "BorrowingLimitExceeded", or "ExceedsQuotaCeiling" (never fits as configured). */
      readonly reason: 'QuotaExceeded' | 'BorrowingLimitExceeded' | 'ExceedsQuotaCeiling';
      readonly message: string;
    };

/** Credits a hypothetical eviction would give back, by ClusterQueue name. */
export type FreedCredits = ReadonlyMap<string, number>;

export interface QueueManagerOptions {
  /** Checked when a ClusterQueue is put; omit to accept any pool name. */
  poolExists?: (pool: string) => boolean;
}

const singleGroupName = (cq: string): string => `\u0000${cq}`;

export class QueueManager {
  private readonly clusterQueues = new Map<string, ClusterQueueState>();
  private readonly localQueues = new Map<string, LocalQueue>();
  /** Unfinished workloads per LocalQueue ("namespace/name"). */
  private readonly localQueueWorkloads = new Map<string, number>();
  private readonly groups = new Map<string, CohortGroup>();
  private changes = 0;

  constructor(private readonly options: QueueManagerOptions = {}) {}

  /** Increases on every change to queue objects (not usage): admission revalidates on change. */
  get revision(): number {
    return this.changes;
  }

  // ---- ClusterQueues ---------------------------------------------------------------------

  /**
   * Creates or replaces a ClusterQueue. Quota may be lowered below usage (admitted workloads keep
   * running; nothing new is admitted until usage drops); the pool may not change while the
   * queue holds workloads.
   */
  putClusterQueue(cq: ClusterQueue, check: ClusterQueueCheckOptions = { poolExists: this.options.poolExists }): ClusterQueue {
    const problems = validateClusterQueue(cq, check);
    const existing = this.clusterQueues.get(cq.name);
    if (existing && existing.spec.pool !== cq.pool && existing.admittedWorkloads > 0) {
      problems.push(problem('pool', `${JSON.stringify(existing.spec.pool)} while ${existing.admittedWorkloads} workloads are admitted`, JSON.stringify(cq.pool)));
    }
    if (problems.length > 0) throw new QueueError('INVALID_ARGUMENT', `ClusterQueue ${JSON.stringify(cq.name)} is invalid`, problems);
    const spec = normalizeClusterQueue(cq);
    const terms = quotaTerms(spec.nominalQuota, spec.borrowingLimit, spec.lendingLimit, spec.cohort !== '');
    if (existing) {
      this.leaveGroup(existing);
      existing.spec = spec;
      existing.terms = terms;
      existing.group = this.groupFor(spec);
      this.joinGroup(existing);
    } else {
      const state: ClusterQueueState = { spec, terms, group: this.groupFor(spec), usage: 0, admittedWorkloads: 0, pendingWorkloads: 0 };
      this.joinGroup(state);
      this.clusterQueues.set(spec.name, state);
    }
    this.changes++;
    return this.view(this.mustGet(spec.name));
  }

  /** Refused while the queue holds admitted or pending workloads; LocalQueues feeding it become dangling. */
  deleteClusterQueue(name: string): void {
    const state = this.mustGet(name);
    if (state.admittedWorkloads > 0 || state.pendingWorkloads > 0) {
      throw new QueueError(
        'FAILED_PRECONDITION',
        `ClusterQueue ${JSON.stringify(name)} still has ${state.admittedWorkloads} admitted and ${state.pendingWorkloads} pending workloads; finish or delete them first`,
      );
    }
    this.leaveGroup(state);
    this.clusterQueues.delete(name);
    this.changes++;
  }

  getClusterQueue(name: string): ClusterQueue | undefined {
    const state = this.clusterQueues.get(name);
    return state && this.view(state);
  }

  listClusterQueues(): ClusterQueue[] {
    return [...this.clusterQueues.keys()].sort().map((n) => this.view(this.mustGet(n)));
  }

  hasClusterQueue(name: string): boolean {
    return this.clusterQueues.has(name);
  }

  /** The stored spec (defaults applied), without a usage copy; for the admission hot path. */
  clusterQueueSpec(name: string): ClusterQueue | undefined {
    return this.clusterQueues.get(name)?.spec;
  }

  /** Every ClusterQueue as given (for routing by pool). */
  clusterQueueSpecs(): ClusterQueue[] {
    return [...this.clusterQueues.values()].map((state) => state.spec);
  }

  // ---- LocalQueues -----------------------------------------------------------------------

  /** Its ClusterQueue must exist, and may not change while the LocalQueue holds workloads. */
  putLocalQueue(lq: LocalQueue): LocalQueue {
    const problems = validateLocalQueue(lq, (n) => this.clusterQueues.has(n));
    const key = workloadKey(lq.namespace, lq.name);
    const existing = this.localQueues.get(key);
    const inUse = this.localQueueWorkloads.get(key) ?? 0;
    if (existing && existing.clusterQueue !== lq.clusterQueue && inUse > 0) {
      problems.push(problem('clusterQueue', `${JSON.stringify(existing.clusterQueue)} while the LocalQueue holds ${inUse} workloads`, JSON.stringify(lq.clusterQueue)));
    }
    if (problems.length > 0) throw new QueueError('INVALID_ARGUMENT', `LocalQueue ${JSON.stringify(key)} is invalid`, problems);
    // managedBy is kept: a managed LocalQueue (a namespace's "default") routes workloads by pool.
    const stored: LocalQueue = { namespace: lq.namespace, name: lq.name, clusterQueue: lq.clusterQueue, ...(lq.managedBy ? { managedBy: lq.managedBy } : {}) };
    this.localQueues.set(key, stored);
    this.changes++;
    return { ...stored };
  }

  /** Refused while workloads submitted through it are pending or admitted. */
  deleteLocalQueue(namespace: string, name: string): void {
    const key = workloadKey(namespace, name);
    if (!this.localQueues.has(key)) throw new QueueError('NOT_FOUND', `LocalQueue ${JSON.stringify(key)} does not exist`);
    const inUse = this.localQueueWorkloads.get(key) ?? 0;
    if (inUse > 0) {
      throw new QueueError('FAILED_PRECONDITION', `LocalQueue ${JSON.stringify(key)} still holds ${inUse} pending or admitted workloads; finish or delete them first`);
    }
    this.localQueues.delete(key);
    this.changes++;
  }

  getLocalQueue(namespace: string, name: string): LocalQueue | undefined {
    const lq = this.localQueues.get(workloadKey(namespace, name));
    return lq && { ...lq };
  }

  listLocalQueues(namespace = ''): LocalQueue[] {
    return [...this.localQueues.values()]
      .filter((lq) => namespace === '' || lq.namespace === namespace)
      .map((lq) => ({ ...lq }))
      .sort((a, b) => workloadKey(a.namespace, a.name).localeCompare(workloadKey(b.namespace, b.name)));
  }

  // ---- cohorts ---------------------------------------------------------------------------

  /** Cohorts exist while a ClusterQueue names them. */
  listCohorts(): Cohort[] {
    return [...this.groups.values()]
      .filter((g) => !g.name.startsWith('\u0000'))
      .map((g) => ({ name: g.name, members: [...g.members].map((m) => m.spec.name).sort() }))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Names of the ClusterQueues sharing a cohort with `cq` (itself included). */
  cohortMembers(cq: string): string[] {
    const state = this.clusterQueues.get(cq);
    return state ? [...state.group.members].map((m) => m.spec.name) : [];
  }

  // ---- quota -----------------------------------------------------------------------------

  /** Whether `credits` more fit into `cq`, optionally as if `freed` credits had been released. */
  checkQuota(cq: string, credits: number, freed?: FreedCredits): QuotaCheck {
    const state = this.mustGet(cq);
    const usage = state.usage - (freed?.get(cq) ?? 0);
    const room = headroom(state.terms, usage, this.cohortFree(state.group, freed));
    if (credits <= room) return { fits: true, borrowed: Math.max(0, usage + credits - state.terms.nominal) };
    const name = JSON.stringify(cq);
    const most = ceiling(state.terms, state.group.lendable);
    if (credits > most) {
      return {
        fits: false,
        reason: 'ExceedsQuotaCeiling',
        message: `needs ${formatCount(credits)} credits, more than ClusterQueue ${name} can ever hold (${formatCount(most)}: nominal ${formatCount(state.terms.nominal)}${
          state.group.members.size > 1 ? ' plus what its cohort may lend' : ''
        }); raise its quota`,
      };
    }
    if (state.spec.cohort !== '' && usage + credits > state.terms.nominal + state.terms.borrowingLimit) {
      return {
        fits: false,
        reason: 'BorrowingLimitExceeded',
        message: `needs ${formatCount(credits)} credits; ClusterQueue ${name} uses ${formatCount(usage)} of ${formatCount(state.terms.nominal)} nominal and may borrow at most ${formatCount(
          state.terms.borrowingLimit,
        )}`,
      };
    }
    return {
      fits: false,
      reason: 'QuotaExceeded',
      message: `needs ${formatCount(credits)} credits; ClusterQueue ${name} can take ${formatCount(room)} now (uses ${formatCount(usage)} of ${formatCount(state.terms.nominal)} nominal${
        state.group.members.size > 1 ? `, cohort ${JSON.stringify(state.spec.cohort)} has ${formatCount(Math.max(0, this.cohortFree(state.group, freed)))} to lend` : ''
      })`,
    };
  }

  /** The most credits `cq` can take right now. */
  headroom(cq: string): number {
    const state = this.mustGet(cq);
    return headroom(state.terms, state.usage, this.cohortFree(state.group));
  }

  /** Takes credits for an admitted (or being-admitted) workload. Checking first is the caller's job. */
  reserve(cq: string, credits: number): void {
    this.adjust(this.mustGet(cq), credits, 1);
  }

  release(cq: string, credits: number): void {
    this.adjust(this.mustGet(cq), -credits, -1);
  }

  usage(cq: string): ClusterQueueUsage {
    const state = this.mustGet(cq);
    return {
      admittedCredits: state.usage,
      borrowedCredits: Math.max(0, state.usage - state.terms.nominal),
      admittedWorkloads: state.admittedWorkloads,
      pendingWorkloads: state.pendingWorkloads,
    };
  }

  /** Uses more than its nominal quota (optionally after a hypothetical release). */
  isBorrowing(cq: string, freed?: FreedCredits): boolean {
    const state = this.mustGet(cq);
    return state.usage - (freed?.get(cq) ?? 0) > state.terms.nominal;
  }

  /** Credits above nominal `cq` would hold with `extra` more. */
  borrowedAfter(cq: string, extra: number): number {
    const state = this.mustGet(cq);
    return Math.max(0, state.usage + extra - state.terms.nominal);
  }

  /** Counts a pending workload (for usage and for refusing deletion). */
  trackPending(cq: string, delta: 1 | -1): void {
    const state = this.clusterQueues.get(cq);
    if (state) state.pendingWorkloads += delta;
  }

  /** Counts an unfinished workload of a LocalQueue (refuses its deletion meanwhile). */
  trackLocalQueue(namespace: string, name: string, delta: 1 | -1): void {
    const key = workloadKey(namespace, name);
    const next = (this.localQueueWorkloads.get(key) ?? 0) + delta;
    if (next <= 0) this.localQueueWorkloads.delete(key);
    else this.localQueueWorkloads.set(key, next);
  }

  isStrictFifo(cq: string): boolean {
    return this.clusterQueues.get(cq)?.spec.queueingStrategy === QueueingStrategy.QUEUEING_STRATEGY_STRICT_FIFO;
  }

  // ---- internals -------------------------------------------------------------------------

  private mustGet(name: string): ClusterQueueState {
    const state = this.clusterQueues.get(name);
    if (!state) throw new QueueError('NOT_FOUND', `ClusterQueue ${JSON.stringify(name)} does not exist`);
    return state;
  }

  private adjust(state: ClusterQueueState, credits: number, workloads: number): void {
    const group = state.group;
    group.shared -= sharedUse(state.terms, state.usage);
    state.usage += credits;
    state.admittedWorkloads += workloads;
    group.shared += sharedUse(state.terms, state.usage);
  }

  private cohortFree(group: CohortGroup, freed?: FreedCredits): number {
    let shared = group.shared;
    if (freed) {
      for (const [name, credits] of freed) {
        const member = this.clusterQueues.get(name);
        if (!member || member.group !== group) continue;
        shared += sharedUse(member.terms, member.usage - credits) - sharedUse(member.terms, member.usage);
      }
    }
    return group.lendable - shared;
  }

  private groupFor(spec: ClusterQueue): CohortGroup {
    const name = spec.cohort !== '' ? spec.cohort : singleGroupName(spec.name);
    let group = this.groups.get(name);
    if (!group) {
      group = { name, members: new Set(), lendable: 0, shared: 0 };
      this.groups.set(name, group);
    }
    return group;
  }

  /** Adds the queue's terms to `state.group`'s sums. */
  private joinGroup(state: ClusterQueueState): void {
    const group = state.group;
    group.members.add(state);
    group.lendable += state.terms.lendable;
    group.shared += sharedUse(state.terms, state.usage);
  }

  private leaveGroup(state: ClusterQueueState): void {
    const group = state.group;
    group.members.delete(state);
    group.lendable -= state.terms.lendable;
    group.shared -= sharedUse(state.terms, state.usage);
    if (group.members.size === 0) this.groups.delete(group.name);
  }

  private view(state: ClusterQueueState): ClusterQueue {
    return { ...state.spec, usage: this.usage(state.spec.name) };
  }
}
