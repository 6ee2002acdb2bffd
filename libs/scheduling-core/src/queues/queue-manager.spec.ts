import { PreemptionPolicy, QueueingStrategy } from '@gpufleet/contracts';
import { ACCEL, clusterQueue } from '../admission/__fixtures__/workloads';
import { QueueError } from './errors';
import { QueueManager } from './queue-manager';

const manager = () => new QueueManager({ poolExists: (p) => p === 'h100' });

function refusal(run: () => unknown): QueueError {
  try {
    run();
  } catch (e) {
    if (e instanceof QueueError) return e;
    throw e;
  }
  throw new Error('expected a QueueError');
}

describe('QueueManager', () => {
  describe('ClusterQueue validation', () => {
    it('refuses a lendingLimit above the nominal quota, naming both', () => {
      const e = refusal(() => manager().putClusterQueue(clusterQueue('a', { cohort: 'research', nominalQuota: ACCEL, lendingLimit: 2 * ACCEL })));
      expect(e.code).toBe('INVALID_ARGUMENT');
      expect(e.message).toBe(
        'INVALID_ARGUMENT: ClusterQueue "a" is invalid: lendingLimit: expected at most nominalQuota (1,600,000): a queue lends only credits it owns, got 3,200,000',
      );
    });

    it('refuses a pool that does not exist and limits without a cohort', () => {
      const e = refusal(() => manager().putClusterQueue(clusterQueue('a', { pool: 'a100', borrowingLimit: ACCEL })));
      expect(e.problems.map((p) => p.message)).toEqual([
        'pool: expected an existing pool (see `gpufleet get pools`), got "a100"',
        'borrowingLimit: expected unset when the queue has no cohort (there is nobody to borrow from), got 1,600,000',
      ]);
    });

    it('refuses ANY as the within-queue preemption policy and unknown packings', () => {
      const e = refusal(() => manager().putClusterQueue(clusterQueue('a', { withinClusterQueue: PreemptionPolicy.PREEMPTION_POLICY_ANY, packing: 'tight' })));
      expect(e.problems.map((p) => p.field)).toEqual(['withinClusterQueue', 'packing']);
    });

    it('applies Kueue defaults: BestEffortFIFO, weight 1, no preemption, binpack', () => {
      const cq = manager().putClusterQueue({
        ...clusterQueue('a'),
        queueingStrategy: QueueingStrategy.QUEUEING_STRATEGY_UNSPECIFIED,
        fairSharingWeight: 0,
        withinClusterQueue: PreemptionPolicy.PREEMPTION_POLICY_UNSPECIFIED,
      });
      expect(cq).toMatchObject({
        queueingStrategy: QueueingStrategy.QUEUEING_STRATEGY_BEST_EFFORT_FIFO,
        fairSharingWeight: 1,
        withinClusterQueue: PreemptionPolicy.PREEMPTION_POLICY_NEVER,
        packing: 'binpack',
        usage: { admittedCredits: 0, borrowedCredits: 0, admittedWorkloads: 0, pendingWorkloads: 0 },
      });
    });
  });

  describe('cohorts', () => {
    it('derives cohorts from the ClusterQueues that name them', () => {
      const m = manager();
      m.putClusterQueue(clusterQueue('a', { cohort: 'research' }));
      m.putClusterQueue(clusterQueue('b', { cohort: 'research' }));
      m.putClusterQueue(clusterQueue('c'));
      expect(m.listCohorts()).toEqual([{ name: 'research', members: ['a', 'b'] }]);
      m.putClusterQueue(clusterQueue('b', { cohort: 'prod' }));
      expect(m.listCohorts()).toEqual([
        { name: 'prod', members: ['b'] },
        { name: 'research', members: ['a'] },
      ]);
    });

    it('lets a queue borrow its cohort\'s unused quota up to its borrowingLimit', () => {
      const m = manager();
      m.putClusterQueue(clusterQueue('a', { cohort: 'research', nominalQuota: 4 * ACCEL, borrowingLimit: 2 * ACCEL }));
      m.putClusterQueue(clusterQueue('b', { cohort: 'research', nominalQuota: 4 * ACCEL }));
      expect(m.checkQuota('a', 6 * ACCEL)).toEqual({ fits: true, borrowed: 2 * ACCEL });
      expect(m.checkQuota('a', 7 * ACCEL)).toMatchObject({ fits: false, reason: 'ExceedsQuotaCeiling' });
      m.reserve('a', 5 * ACCEL);
      expect(m.usage('a')).toEqual({ admittedCredits: 5 * ACCEL, borrowedCredits: ACCEL, admittedWorkloads: 1, pendingWorkloads: 0 });
      expect(m.checkQuota('a', 2 * ACCEL)).toMatchObject({
        fits: false,
        reason: 'BorrowingLimitExceeded',
        message: 'needs 3,200,000 credits; ClusterQueue "a" uses 8,000,000 of 6,400,000 nominal and may borrow at most 3,200,000',
      });
    });

    it('lends no more than a lender\'s lendingLimit, and the lender keeps the rest for itself', () => {
      const m = manager();
      m.putClusterQueue(clusterQueue('a', { cohort: 'research', nominalQuota: 2 * ACCEL }));
      m.putClusterQueue(clusterQueue('b', { cohort: 'research', nominalQuota: 4 * ACCEL, lendingLimit: ACCEL }));
      expect(m.headroom('a')).toBe(3 * ACCEL);
      m.reserve('a', 3 * ACCEL);
      expect(m.checkQuota('a', 1)).toMatchObject({ fits: false, reason: 'QuotaExceeded' });
      // b still has its 3 guaranteed accelerators…
      expect(m.checkQuota('b', 3 * ACCEL)).toMatchObject({ fits: true });
      // …but the one it lent is in use by a: reclaiming it needs preemption.
      expect(m.checkQuota('b', 4 * ACCEL)).toMatchObject({ fits: false });
      expect(m.isBorrowing('a')).toBe(true);
      expect(m.checkQuota('b', 4 * ACCEL, new Map([['a', ACCEL]]))).toMatchObject({ fits: true });
    });

    it('keeps a queue without cohort within its nominal quota', () => {
      const m = manager();
      m.putClusterQueue(clusterQueue('solo', { nominalQuota: 2 * ACCEL }));
      expect(m.checkQuota('solo', 2 * ACCEL)).toMatchObject({ fits: true });
      expect(m.checkQuota('solo', 3 * ACCEL)).toMatchObject({ fits: false, reason: 'ExceedsQuotaCeiling' });
    });
  });

  describe('deletion and references', () => {
    it('refuses to delete a ClusterQueue with admitted workloads, saying why', () => {
      const m = manager();
      m.putClusterQueue(clusterQueue('a'));
      m.reserve('a', ACCEL);
      const e = refusal(() => m.deleteClusterQueue('a'));
      expect(e.message).toBe('FAILED_PRECONDITION: ClusterQueue "a" still has 1 admitted and 0 pending workloads; finish or delete them first');
      m.release('a', ACCEL);
      m.deleteClusterQueue('a');
      expect(m.getClusterQueue('a')).toBeUndefined();
    });

    it('refuses to move an admitting ClusterQueue to another pool', () => {
      const m = new QueueManager();
      m.putClusterQueue(clusterQueue('a'));
      m.reserve('a', ACCEL);
      expect(refusal(() => m.putClusterQueue(clusterQueue('a', { pool: 'a100' }))).problems[0].message).toBe(
        'pool: expected "h100" while 1 workloads are admitted, got "a100"',
      );
    });

    it('requires a LocalQueue to feed an existing ClusterQueue and keeps it while it holds workloads', () => {
      const m = manager();
      expect(refusal(() => m.putLocalQueue({ namespace: 'team-a', name: 'main', clusterQueue: 'a' })).problems[0].message).toBe(
        'clusterQueue: expected an existing ClusterQueue, got "a"',
      );
      m.putClusterQueue(clusterQueue('a'));
      m.putLocalQueue({ namespace: 'team-a', name: 'main', clusterQueue: 'a' });
      m.trackLocalQueue('team-a', 'main', 1);
      expect(refusal(() => m.deleteLocalQueue('team-a', 'main')).code).toBe('FAILED_PRECONDITION');
      m.trackLocalQueue('team-a', 'main', -1);
      m.deleteLocalQueue('team-a', 'main');
      expect(m.listLocalQueues()).toEqual([]);
    });
  });
});
