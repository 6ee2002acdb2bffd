/**
 * Validation and defaults of ClusterQueues and LocalQueues, apart from the state they go into.
 */
import { ClusterQueue, LocalQueue, PreemptionPolicy, QueueingStrategy } from '@gpufleet/contracts';
import { checkDns1123Label } from '../validation/names';
import { formatCount, problem, shown, ValidationProblem } from '../validation/problems';

export const PACKINGS = ['binpack', 'spread'] as const;

function checkCredits(field: string, value: number | undefined): ValidationProblem | undefined {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return undefined;
  return problem(field, 'a whole number of credits ≥ 0 (1 accelerator-hour = 1,600,000)', shown(value));
}

export interface ClusterQueueCheckOptions {
  /** Whether the pool exists; omitted: not checked (e.g. when loading saved queues before nodes report). */
  poolExists?: (pool: string) => boolean;
}

export function validateClusterQueue(cq: ClusterQueue, options: ClusterQueueCheckOptions = {}): ValidationProblem[] {
  const problems: ValidationProblem[] = [];
  const add = (p: ValidationProblem | undefined): void => {
    if (p) problems.push(p);
  };
  add(checkDns1123Label('name', cq.name));
  if (typeof cq.pool !== 'string' || cq.pool === '') problems.push(problem('pool', 'the name of the pool this queue admits into', 'an empty string'));
  else if (options.poolExists && !options.poolExists(cq.pool)) problems.push(problem('pool', 'an existing pool (see `gpufleet get pools`)', shown(cq.pool)));
  const inCohort = typeof cq.cohort === 'string' && cq.cohort !== '';
  if (inCohort) add(checkDns1123Label('cohort', cq.cohort));
  if (![QueueingStrategy.QUEUEING_STRATEGY_UNSPECIFIED, QueueingStrategy.QUEUEING_STRATEGY_STRICT_FIFO, QueueingStrategy.QUEUEING_STRATEGY_BEST_EFFORT_FIFO].includes(cq.queueingStrategy)) {
    problems.push(problem('queueingStrategy', 'STRICT_FIFO or BEST_EFFORT_FIFO', shown(cq.queueingStrategy)));
  }
  add(checkCredits('nominalQuota', cq.nominalQuota));
  if (cq.borrowingLimit !== undefined) {
    if (!inCohort) problems.push(problem('borrowingLimit', 'unset when the queue has no cohort (there is nobody to borrow from)', formatCount(cq.borrowingLimit)));
    else add(checkCredits('borrowingLimit', cq.borrowingLimit));
  }
  if (cq.lendingLimit !== undefined) {
    if (!inCohort) problems.push(problem('lendingLimit', 'unset when the queue has no cohort (there is nobody to lend to)', formatCount(cq.lendingLimit)));
    else {
      const p = checkCredits('lendingLimit', cq.lendingLimit);
      if (p) problems.push(p);
      else if (cq.lendingLimit > cq.nominalQuota) {
        problems.push(problem('lendingLimit', `at most nominalQuota (${formatCount(cq.nominalQuota)}): a queue lends only credits it owns`, formatCount(cq.lendingLimit)));
      }
    }
  }
  const weight = cq.fairSharingWeight;
  if (typeof weight !== 'number' || !Number.isFinite(weight) || weight < 0) {
    problems.push(problem('fairSharingWeight', 'a finite number ≥ 0 (0 or unset means 1)', shown(weight)));
  }
  if (![PreemptionPolicy.PREEMPTION_POLICY_UNSPECIFIED, PreemptionPolicy.PREEMPTION_POLICY_NEVER, PreemptionPolicy.PREEMPTION_POLICY_LOWER_PRIORITY].includes(cq.withinClusterQueue)) {
    problems.push(problem('withinClusterQueue', 'NEVER or LOWER_PRIORITY (ANY applies to reclaimWithinCohort only)', shown(cq.withinClusterQueue)));
  }
  if (
    ![PreemptionPolicy.PREEMPTION_POLICY_UNSPECIFIED, PreemptionPolicy.PREEMPTION_POLICY_NEVER, PreemptionPolicy.PREEMPTION_POLICY_LOWER_PRIORITY, PreemptionPolicy.PREEMPTION_POLICY_ANY].includes(
      cq.reclaimWithinCohort,
    )
  ) {
    problems.push(problem('reclaimWithinCohort', 'NEVER, LOWER_PRIORITY or ANY', shown(cq.reclaimWithinCohort)));
  }
  if (cq.packing !== '' && cq.packing !== undefined && !(PACKINGS as readonly string[]).includes(cq.packing)) {
    problems.push(problem('packing', `one of ${PACKINGS.join(', ')} (or empty for binpack)`, shown(cq.packing)));
  }
  return problems;
}

/** The stored form: defaults applied, usage left to the queue state. */
export function normalizeClusterQueue(cq: ClusterQueue): ClusterQueue {
  return {
    name: cq.name,
    pool: cq.pool,
    cohort: cq.cohort ?? '',
    queueingStrategy:
      cq.queueingStrategy === QueueingStrategy.QUEUEING_STRATEGY_UNSPECIFIED ? QueueingStrategy.QUEUEING_STRATEGY_BEST_EFFORT_FIFO : cq.queueingStrategy,
    nominalQuota: cq.nominalQuota,
    borrowingLimit: cq.borrowingLimit,
    lendingLimit: cq.lendingLimit,
    fairSharingWeight: cq.fairSharingWeight > 0 ? cq.fairSharingWeight : 1,
    withinClusterQueue:
      cq.withinClusterQueue === PreemptionPolicy.PREEMPTION_POLICY_UNSPECIFIED ? PreemptionPolicy.PREEMPTION_POLICY_NEVER : cq.withinClusterQueue,
    reclaimWithinCohort:
      cq.reclaimWithinCohort === PreemptionPolicy.PREEMPTION_POLICY_UNSPECIFIED ? PreemptionPolicy.PREEMPTION_POLICY_NEVER : cq.reclaimWithinCohort,
    packing: cq.packing === 'spread' ? 'spread' : 'binpack',
    usage: undefined,
  };
}

export function validateLocalQueue(lq: LocalQueue, clusterQueueExists: (name: string) => boolean): ValidationProblem[] {
  const problems: ValidationProblem[] = [];
  const add = (p: ValidationProblem | undefined): void => {
    if (p) problems.push(p);
  };
  add(checkDns1123Label('namespace', lq.namespace));
  add(checkDns1123Label('name', lq.name));
  if (typeof lq.clusterQueue !== 'string' || lq.clusterQueue === '') problems.push(problem('clusterQueue', 'the ClusterQueue this LocalQueue feeds', 'an empty string'));
  else if (!clusterQueueExists(lq.clusterQueue)) problems.push(problem('clusterQueue', 'an existing ClusterQueue', shown(lq.clusterQueue)));
  return problems;
}
