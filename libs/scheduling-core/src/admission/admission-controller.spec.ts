import { PreemptionPolicy, QueueingStrategy, WorkloadPhase } from '@gpufleet/contracts';
import { MANAGED_BY_GPUFLEET } from '../queues/default-queues';
import { harness, Harness } from './__fixtures__/harness';
import { ACCEL, clusterQueue, h100Pool, wholeWorkload, WholeOptions } from './__fixtures__/workloads';

/** One ClusterQueue `cq` on pool h100 (4 nodes × 8), LocalQueue team-a/main feeding it. */
function single(overrides: Parameters<typeof clusterQueue>[1] = {}, nodes = 4): Harness {
  const h = harness({ pools: [h100Pool('h100', nodes)] });
  h.queues.putClusterQueue(clusterQueue('cq', overrides));
  h.queues.putLocalQueue({ namespace: 'team-a', name: 'main', clusterQueue: 'cq' });
  return h;
}

/** A cohort "research" of ClusterQueues, each with LocalQueue <name>/main. */
function cohort(members: Record<string, Parameters<typeof clusterQueue>[1]>): Harness {
  const h = harness();
  for (const [name, overrides] of Object.entries(members)) {
    h.queues.putClusterQueue(clusterQueue(name, { cohort: 'research', ...overrides }));
    h.queues.putLocalQueue({ namespace: name, name: 'main', clusterQueue: name });
  }
  return h;
}

const job = (name: string, options: WholeOptions = {}) => wholeWorkload(name, options);
const phase = (h: Harness, key: string) => h.controller.getWorkload(key)?.status?.phase;

describe('AdmissionController', () => {
  describe('the default LocalQueue routes by pool', () => {
    /** Pools h100 and l40s with their default queues; team-a's managed LocalQueue "default" points at h100's. */
    function twoPools(): Harness {
      const h = harness({ pools: [h100Pool('h100', 1), h100Pool('l40s', 1, { accelerators: 4 })] });
      h.queues.putClusterQueue(clusterQueue('default-h100', { managedBy: MANAGED_BY_GPUFLEET }));
      h.queues.putClusterQueue(clusterQueue('default-l40s', { pool: 'l40s', managedBy: MANAGED_BY_GPUFLEET }));
      h.queues.putLocalQueue({ namespace: 'team-a', name: 'default', clusterQueue: 'default-h100', managedBy: MANAGED_BY_GPUFLEET });
      return h;
    }

    it("a workload sized for another pool is admitted through that pool's queue", () => {
      const h = twoPools();
      h.submit({ ...job('on-l40s', { localQueue: 'default' }), pool: 'l40s' });
      h.submit(job('no-pool', { localQueue: 'default' }));
      expect(h.admittedKeys().sort()).toEqual(['team-a/no-pool', 'team-a/on-l40s']);
      expect(h.controller.getWorkload('team-a/on-l40s')?.status).toMatchObject({ clusterQueue: 'default-l40s', pool: 'l40s' });
      expect(h.controller.getWorkload('team-a/no-pool')?.status).toMatchObject({ clusterQueue: 'default-h100', pool: 'h100' });
    });

    it("an administrator's LocalQueue refuses a workload of another pool, naming both", () => {
      const h = single();
      const result = h.controller.submit({ ...job('elsewhere'), pool: 'l40s' });
      expect(result.accepted).toBe(false);
      expect(!result.accepted && result.message).toContain('localQueue: expected a LocalQueue that admits into pool "l40s"');
    });
  });

  describe('queue order', () => {
    it('admits higher priority first, then in submission order', () => {
      const h = single({ nominalQuota: 2 * ACCEL });
      h.submit(job('low', { priority: 1 }));
      h.submit(job('high', { priority: 9 }));
      h.submit(job('mid', { priority: 5 }));
      expect(h.admittedKeys()).toEqual(['team-a/high', 'team-a/mid']);
      expect(phase(h, 'team-a/low')).toBe(WorkloadPhase.WORKLOAD_PHASE_PENDING);
    });

    it('StrictFIFO: a head that does not fit blocks the workloads behind it', () => {
      const h = single({ nominalQuota: 4 * ACCEL, queueingStrategy: QueueingStrategy.QUEUEING_STRATEGY_STRICT_FIFO });
      h.submit(job('running', { whole: 2 }));
      h.admit();
      h.submit(job('big', { whole: 4 }));
      h.submit(job('small', { whole: 1 }));
      expect(h.admittedKeys()).toEqual([]);
      const explanation = h.controller.explainPending('team-a/small');
      expect(explanation.queuePosition).toBe(2);
      expect(explanation.gates[1]).toMatchObject({ gate: 'Quota', passed: false, reason: 'Queued' });
      expect(explanation.gates[1].message).toContain('StrictFIFO: team-a/big at the head must be admitted first');
    });

    it('BestEffortFIFO: workloads that fit pass a head that does not', () => {
      const h = single({ nominalQuota: 4 * ACCEL });
      h.submit(job('running', { whole: 2 }));
      h.admit();
      h.submit(job('big', { whole: 4 }));
      h.submit(job('small', { whole: 1 }));
      expect(h.admittedKeys()).toEqual(['team-a/small']);
      expect(h.controller.explainPending('team-a/big').gates[1]).toMatchObject({ gate: 'Quota', passed: false, reason: 'QuotaExceeded' });
    });
  });

  describe('borrowing and lending', () => {
    it('borrows idle cohort quota up to the borrowingLimit', () => {
      const h = cohort({ a: { nominalQuota: 2 * ACCEL, borrowingLimit: 2 * ACCEL }, b: { nominalQuota: 8 * ACCEL } });
      for (let i = 0; i < 6; i++) h.submit(job(`j${i}`, { namespace: 'a' }));
      expect(h.admittedKeys()).toHaveLength(4);
      expect(h.queues.usage('a')).toMatchObject({ admittedCredits: 4 * ACCEL, borrowedCredits: 2 * ACCEL, admittedWorkloads: 4, pendingWorkloads: 2 });
      expect(h.controller.explainPending('a/j4').gates[1]).toMatchObject({ reason: 'BorrowingLimitExceeded' });
    });

    it('borrows no more than a lender\'s lendingLimit; the lender keeps the rest', () => {
      const h = cohort({ a: { nominalQuota: 2 * ACCEL }, b: { nominalQuota: 8 * ACCEL, lendingLimit: 2 * ACCEL } });
      for (let i = 0; i < 6; i++) h.submit(job(`j${i}`, { namespace: 'a' }));
      expect(h.admittedKeys()).toHaveLength(4);
      for (let i = 0; i < 8; i++) h.submit(job(`k${i}`, { namespace: 'b' }));
      expect(h.admittedKeys()).toHaveLength(6);
      expect(h.queues.usage('b').admittedCredits).toBe(6 * ACCEL);
    });

    it('fair sharing: workloads within nominal go first, then the lowest borrowed/weight share', () => {
      const h = cohort({ lender: { nominalQuota: 8 * ACCEL }, a: { nominalQuota: 0, fairSharingWeight: 1 }, b: { nominalQuota: 0, fairSharingWeight: 3 } });
      for (let i = 0; i < 8; i++) h.submit(job(`a${i}`, { namespace: 'a' }));
      for (let i = 0; i < 8; i++) h.submit(job(`b${i}`, { namespace: 'b' }));
      h.submit(job('own', { namespace: 'lender' }));
      const order = h.admittedKeys();
      // lender's own workload needs no borrowing; then shares after admission: b 1/3 < a 1/1, b 2/3,
      // then a 1 = b 1 (a submitted first), b 4/3, b 5/3, a 2 = b 2 (a first)... until 7 are borrowed.
      expect(order).toEqual(['lender/own', 'b/b0', 'b/b1', 'a/a0', 'b/b2', 'b/b3', 'b/b4', 'a/a1']);
    });
  });

  describe('preemption', () => {
    function withAdmitted(policy: PreemptionPolicy): Harness {
      const h = single({ nominalQuota: 4 * ACCEL, withinClusterQueue: policy });
      h.submit(job('old-low', { priority: 0 }));
      h.submit(job('new-low', { priority: 0 }));
      h.submit(job('mid', { priority: 1, whole: 2 }));
      expect(h.admittedKeys()).toHaveLength(3);
      return h;
    }

    it('within the queue evicts the lowest-priority, most recently admitted workload', () => {
      const h = withAdmitted(PreemptionPolicy.PREEMPTION_POLICY_LOWER_PRIORITY);
      h.submit(job('urgent', { priority: 5 }));
      const decisions = h.admit();
      expect(decisions.map((d) => `${d.kind} ${d.key}`)).toEqual(['preempt team-a/new-low', 'admit team-a/urgent']);
      const preempt = decisions[0];
      expect(preempt.events.map((e) => e.kind)).toEqual(['preempted']);
      expect(preempt.events[0].reason).toBe('preempted by team-a/urgent (priority 5 > 0) within ClusterQueue "cq"');
      expect(phase(h, 'team-a/new-low')).toBe(WorkloadPhase.WORKLOAD_PHASE_PENDING);
      // Requeued, and tried again at once: the queue is full now.
      expect(h.controller.explainPending('team-a/new-low').gates[1]).toMatchObject({ gate: 'Quota', reason: 'QuotaExceeded' });
      expect(h.placer.holds('team-a/new-low')).toBe(false);
    });

    it('keeps only the victims needed (the minimal set)', () => {
      const h = withAdmitted(PreemptionPolicy.PREEMPTION_POLICY_LOWER_PRIORITY);
      // Needs 2: taking new-low then old-low would do, but so does mid alone once both are tried.
      h.submit(job('urgent', { priority: 5, whole: 2 }));
      const victims = h.admit().filter((d) => d.kind === 'preempt').map((d) => d.key);
      expect(victims.sort()).toEqual(['team-a/new-low', 'team-a/old-low']);

      const g = single({ nominalQuota: 3 * ACCEL, withinClusterQueue: PreemptionPolicy.PREEMPTION_POLICY_LOWER_PRIORITY });
      g.submit(job('low', { priority: 0 }));
      g.submit(job('mid', { priority: 1, whole: 2 }));
      g.admittedKeys();
      g.submit(job('urgent', { priority: 5, whole: 2 }));
      // low (1) alone is not enough, low + mid is more than needed: mid alone suffices.
      expect(g.admit().map((d) => `${d.kind} ${d.key}`)).toEqual(['preempt team-a/mid', 'admit team-a/urgent']);
      expect(phase(g, 'team-a/low')).toBe(WorkloadPhase.WORKLOAD_PHASE_ADMITTED);
    });

    it('never preempts under policy NEVER, nor equal or higher priority under LOWER_PRIORITY', () => {
      const never = withAdmitted(PreemptionPolicy.PREEMPTION_POLICY_NEVER);
      never.submit(job('urgent', { priority: 5 }));
      expect(never.admit()).toEqual([]);
      const lower = withAdmitted(PreemptionPolicy.PREEMPTION_POLICY_LOWER_PRIORITY);
      lower.submit(job('peer', { priority: 0 }));
      expect(lower.admit()).toEqual([]);
    });

    it('reclaims lent quota from cohort members that borrow, only as much as needed', () => {
      const h = cohort({
        a: { nominalQuota: 4 * ACCEL, reclaimWithinCohort: PreemptionPolicy.PREEMPTION_POLICY_ANY },
        b: { nominalQuota: 4 * ACCEL },
      });
      for (let i = 0; i < 7; i++) h.submit(job(`b${i}`, { namespace: 'b', priority: 10 }));
      expect(h.admittedKeys()).toHaveLength(7);
      expect(h.queues.usage('b').borrowedCredits).toBe(3 * ACCEL);
      h.submit(job('mine', { namespace: 'a', whole: 3 }));
      const decisions = h.admit();
      expect(decisions.map((d) => `${d.kind} ${d.key}`)).toEqual(['preempt b/b6', 'preempt b/b5', 'admit a/mine']);
      expect(decisions[0].events[0].reason).toBe('preempted by a/mine: ClusterQueue "a" reclaims quota lent to "b" in cohort "research"');
      expect(h.queues.usage('b')).toMatchObject({ admittedCredits: 5 * ACCEL, borrowedCredits: ACCEL });
    });

    it('reclaim under LOWER_PRIORITY spares borrowers of equal or higher priority', () => {
      const h = cohort({
        a: { nominalQuota: 4 * ACCEL, reclaimWithinCohort: PreemptionPolicy.PREEMPTION_POLICY_LOWER_PRIORITY },
        b: { nominalQuota: 4 * ACCEL },
      });
      for (let i = 0; i < 8; i++) h.submit(job(`b${i}`, { namespace: 'b', priority: 3 }));
      h.admittedKeys();
      h.submit(job('mine', { namespace: 'a', priority: 3 }));
      expect(h.admit()).toEqual([]);
      expect(h.controller.explainPending('a/mine').gates[1]).toMatchObject({ passed: false, reason: 'QuotaExceeded' });
    });
  });

  describe('release', () => {
    it('delete releases quota and devices, and the next workload takes them', () => {
      const h = single({ nominalQuota: 8 * ACCEL }, 1);
      h.submit(job('first', { whole: 8 }));
      h.submit(job('second', { whole: 8 }));
      expect(h.admittedKeys()).toEqual(['team-a/first']);
      const released = h.controller.delete('team-a/first');
      expect(released.releasedPlacements).toHaveLength(1);
      expect(released.events.map((e) => [e.kind, e.reason])).toEqual([['finished', 'Deleted']]);
      expect(h.queues.usage('cq').admittedCredits).toBe(0);
      expect(h.placer.usedAccelerators('h100')).toBe(0);
      expect(h.controller.getWorkload('team-a/first')).toBeUndefined();
      expect(h.admittedKeys()).toEqual(['team-a/second']);
    });

    it('finish keeps the workload as Finished with its reason', () => {
      const h = single();
      h.submit(job('train'));
      h.admit();
      h.controller.finish('team-a/train', 'Completed');
      expect(h.controller.getWorkload('team-a/train')?.status).toMatchObject({ phase: WorkloadPhase.WORKLOAD_PHASE_FINISHED, finishReason: 'Completed', placements: [] });
      expect(() => h.controller.finish('team-a/train')).toThrow('FAILED_PRECONDITION: workload team-a/train already finished (Completed)');
    });
  });

  describe('ledger commit protocol', () => {
    it('publishes submitted, quota_reserved and admitted events as the workload moves', () => {
      const h = single();
      const submitted = h.controller.submit(job('svc'));
      expect(submitted.accepted && submitted.events.map((e) => e.kind)).toEqual(['submitted']);
      const [decision] = h.controller.cycle().decisions;
      expect(decision.kind).toBe('admit');
      expect(decision.events.map((e) => e.kind)).toEqual(['quota_reserved']);
      expect(decision.workload.status?.phase).toBe(WorkloadPhase.WORKLOAD_PHASE_QUOTA_RESERVED);
      const confirmed = h.controller.confirmAdmission(decision.key, decision.kind === 'admit' ? decision.placements : []);
      expect(confirmed.ok && confirmed.events.map((e) => e.kind)).toEqual(['admitted']);
      expect(confirmed.ok && confirmed.workload.status).toMatchObject({ phase: WorkloadPhase.WORKLOAD_PHASE_ADMITTED, admissionSequence: 1, credits: ACCEL });
    });

    it('a ledger conflict puts the workload back at its place; the next cycle admits it', () => {
      const h = single({ nominalQuota: ACCEL });
      h.submit(job('svc'));
      const [decision] = h.controller.cycle().decisions;
      h.controller.abortAdmission(decision.key, 'revision 41 is now 42 on node h100-0');
      expect(h.queues.usage('cq').admittedCredits).toBe(0);
      expect(h.placer.holds('team-a/svc')).toBe(false);
      expect(h.controller.explainPending('team-a/svc').gates[3]).toMatchObject({ gate: 'Placement', reason: 'LedgerConflict' });
      expect(h.admittedKeys()).toEqual(['team-a/svc']);
    });

    it('refuses to confirm a workload deleted while its ledger write was in flight', () => {
      const h = single();
      h.submit(job('svc'));
      const [decision] = h.controller.cycle().decisions;
      h.controller.delete('team-a/svc');
      expect(h.controller.confirmAdmission(decision.key)).toMatchObject({ ok: false, reason: 'NotReserved' });
      expect(h.placer.holds('team-a/svc')).toBe(false);
    });
  });

  describe('explainPending', () => {
    it('reports the failing gate, the gates not reached, and the queue position', () => {
      const h = single({ nominalQuota: 0 });
      h.submit(job('a', { priority: 1 }));
      h.submit(job('b', { priority: 5 }));
      h.submit(job('c', { priority: 1 }));
      h.admit();
      const explanation = h.controller.explainPending('team-a/c');
      expect(explanation.queuePosition).toBe(3);
      expect(explanation.gates.map((g) => [g.gate, g.passed, g.reason])).toEqual([
        ['Validation', true, 'Passed'],
        ['Quota', false, 'ExceedsQuotaCeiling'],
        ['DeviceFit', false, 'NotReached'],
        ['Placement', false, 'NotReached'],
      ]);
      expect(h.controller.explainPending('team-a/b').queuePosition).toBe(1);
    });

    it('DeviceFit: no node has the devices; shows the largest free block', () => {
      const h = single({ nominalQuota: 64 * ACCEL }, 1);
      h.submit(job('six', { whole: 6 }));
      h.admit();
      h.submit(job('four', { whole: 4 }));
      h.admit();
      const explanation = h.controller.explainPending('team-a/four');
      expect(explanation.gates.map((g) => [g.gate, g.passed, g.reason])).toEqual([
        ['Validation', true, 'Passed'],
        ['Quota', true, 'Passed'],
        ['DeviceFit', false, 'NoFit'],
        ['Placement', false, 'NotReached'],
      ]);
      expect(explanation.largestFreeBlock).toBe('2 whole accelerators on one node (h100-0)');
    });

    it('Placement: devices are free but not within the required topology level', () => {
      const h = single({ nominalQuota: 64 * ACCEL }, 2);
      h.submit(job('five-0', { whole: 5 }));
      h.submit(job('five-1', { whole: 5 }));
      h.admit();
      h.submit(job('tp', { whole: 3, size: 2, requiredLevel: 'node' }));
      h.admit();
      const gates = h.controller.explainPending('team-a/tp').gates;
      expect(gates.map((g) => [g.gate, g.passed, g.reason])).toEqual([
        ['Validation', true, 'Passed'],
        ['Quota', true, 'Passed'],
        ['DeviceFit', true, 'Passed'],
        ['Placement', false, 'TopologyUnsatisfiable'],
      ]);
    });

    it('Validation: a pool that shrank below a pending workload stops it with the reason', () => {
      const h = single({ nominalQuota: 64 * ACCEL }, 1);
      h.submit(job('whole-node', { whole: 8 }));
      h.controller.setPoolShape(h100Pool('h100', 1, { accelerators: 4 }));
      h.admit();
      const gate = h.controller.explainPending('team-a/whole-node').gates[0];
      expect(gate).toMatchObject({ gate: 'Validation', passed: false, reason: 'InvalidWorkload' });
      expect(gate.message).toContain('podSets[0].resources.accelerator.whole: expected an integer from 1 to 4');
    });
  });

  describe('submission', () => {
    it('rejects an invalid workload with every problem, and a duplicate name', () => {
      const h = single();
      const bad = h.controller.submit({ ...job('Bad'), localQueue: 'missing' });
      expect(bad).toMatchObject({ accepted: false, code: 'INVALID_ARGUMENT' });
      expect(!bad.accepted && bad.problems.map((p) => p.field)).toEqual(['name', 'localQueue']);
      h.submit(job('dup'));
      expect(h.controller.submit(job('dup'))).toMatchObject({ accepted: false, code: 'ALREADY_EXISTS' });
    });
  });

  describe('work per cycle', () => {
    it('a blocked StrictFIFO queue costs nothing until capacity changes', () => {
      const h = single({ nominalQuota: 64 * ACCEL, queueingStrategy: QueueingStrategy.QUEUEING_STRATEGY_STRICT_FIFO }, 1);
      h.submit(job('hog', { whole: 8 }));
      h.admit();
      for (let i = 0; i < 50; i++) h.submit(job(`w${i}`));
      expect(h.controller.cycle().attempted).toBe(1);
      const calls = h.placer.tryPlaceCalls;
      expect(h.controller.cycle().attempted).toBe(0);
      expect(h.placer.tryPlaceCalls).toBe(calls);
      h.controller.delete('team-a/hog');
      expect(h.admittedKeys()).toHaveLength(8);
    });

    it('BestEffortFIFO asks the Placer once per request shape and parks the rest until devices free up', () => {
      const h = single({ nominalQuota: 640 * ACCEL }, 1);
      h.submit(job('hog', { whole: 8 }));
      h.admit();
      const before = h.placer.tryPlaceCalls;
      for (let i = 0; i < 100; i++) h.submit(job(`w${i}`, { whole: 1 + (i % 2) }));
      expect(h.controller.cycle().attempted).toBe(100);
      expect(h.placer.tryPlaceCalls - before).toBe(2);
      expect(h.controller.cycle().attempted).toBe(0);
      h.controller.finish('team-a/hog');
      // 1+2+1+2+1 = 7 of 8; w5 (2) does not fit and is passed over by w6 (1).
      expect(h.admittedKeys()).toEqual(['team-a/w0', 'team-a/w1', 'team-a/w2', 'team-a/w3', 'team-a/w4', 'team-a/w6']);
    });
  });

  describe('restore', () => {
    it('admitted workloads hold quota and devices again; pending ones keep their order', () => {
      const h = single({ nominalQuota: 2 * ACCEL });
      h.submit(job('a'));
      h.submit(job('b'));
      h.submit(job('c', { priority: 1 }));
      h.submit(job('d'));
      h.admittedKeys();
      const stored = h.controller.listWorkloads();

      const fresh = single({ nominalQuota: 2 * ACCEL });
      const result = fresh.controller.restore([...stored].reverse());
      expect(result).toEqual({ admitted: 2, pending: 2, finished: 0, warnings: [] });
      expect(fresh.queues.usage('cq')).toMatchObject({ admittedCredits: 2 * ACCEL, admittedWorkloads: 2, pendingWorkloads: 2 });
      expect(fresh.placer.usedAccelerators('h100')).toBe(2);
      expect(fresh.controller.explainPending('team-a/b').queuePosition).toBe(1);
      fresh.controller.finish('team-a/c');
      fresh.controller.finish('team-a/a');
      expect(fresh.admittedKeys()).toEqual(['team-a/b', 'team-a/d']);
    });

    it('keeps a restored workload whose LocalQueue is gone pending, and queues it once the LocalQueue is back', () => {
      const h = single();
      h.submit(job('orphan'));
      const stored = h.controller.listWorkloads();

      const fresh = harness();
      fresh.queues.putClusterQueue(clusterQueue('cq'));
      expect(fresh.controller.restore(stored)).toMatchObject({ pending: 1 });
      // It waits in the ClusterQueue it was stored with, stopped at Validation.
      const explanation = fresh.controller.explainPending('team-a/orphan');
      expect(explanation.queuePosition).toBe(1);
      expect(explanation.gates[0]).toMatchObject({ gate: 'Validation', passed: false });
      expect(explanation.gates[0].message).toContain('localQueue: expected an existing LocalQueue of namespace "team-a", got "main"');
      expect(fresh.admittedKeys()).toEqual([]);
      fresh.queues.putLocalQueue({ namespace: 'team-a', name: 'main', clusterQueue: 'cq' });
      expect(fresh.admittedKeys()).toEqual(['team-a/orphan']);
    });

    it('requeues a workload stored as QUOTA_RESERVED (its ledger write never landed)', () => {
      const h = single();
      h.submit(job('in-flight'));
      h.controller.cycle();
      const stored = h.controller.listWorkloads();
      expect(stored[0].status?.phase).toBe(WorkloadPhase.WORKLOAD_PHASE_QUOTA_RESERVED);
      const fresh = single();
      expect(fresh.controller.restore(stored)).toMatchObject({ admitted: 0, pending: 1 });
      expect(fresh.placer.usedAccelerators('h100')).toBe(0);
      expect(fresh.admittedKeys()).toEqual(['team-a/in-flight']);
    });
  });
});
