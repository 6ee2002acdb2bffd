// Whatever the queues, cohorts and stream of submit/cycle/confirm/abort/finish/delete, quota is
// never exceeded and every workload is accounted for exactly once.
import fc from 'fast-check';
import { ClusterQueue, keyOfSpec, PreemptionPolicy, QueueingStrategy, WorkloadPhase } from '@gpufleet/contracts';
import { QueueManager } from '../queues/queue-manager';
import { AdmissionController } from './admission-controller';
import type { AdmitDecision } from './decisions';
import { WholeAcceleratorPlacer } from './__fixtures__/whole-accelerator-placer';
import { ACCEL, clusterQueue, h100Pool, wholeWorkload } from './__fixtures__/workloads';

const queueConfig = fc
  .record({
    cohort: fc.constantFrom('', 'c1', 'c2'),
    nominal: fc.integer({ min: 0, max: 8 }),
    borrowingLimit: fc.option(fc.integer({ min: 0, max: 4 }), { nil: undefined }),
    lendingLimit: fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined }),
    weight: fc.integer({ min: 0, max: 3 }),
    strict: fc.boolean(),
    within: fc.constantFrom(PreemptionPolicy.PREEMPTION_POLICY_NEVER, PreemptionPolicy.PREEMPTION_POLICY_LOWER_PRIORITY, PreemptionPolicy.PREEMPTION_POLICY_LOWER_PRIORITY),
    reclaim: fc.constantFrom(PreemptionPolicy.PREEMPTION_POLICY_NEVER, PreemptionPolicy.PREEMPTION_POLICY_LOWER_PRIORITY, PreemptionPolicy.PREEMPTION_POLICY_ANY),
  })
  .map(
    (c): Omit<ClusterQueue, 'name'> => ({
      ...clusterQueue('x'),
      cohort: c.cohort,
      nominalQuota: c.nominal * ACCEL,
      borrowingLimit: c.cohort === '' || c.borrowingLimit === undefined ? undefined : c.borrowingLimit * ACCEL,
      lendingLimit: c.cohort === '' || c.lendingLimit === undefined ? undefined : Math.min(c.lendingLimit, c.nominal) * ACCEL,
      fairSharingWeight: c.weight,
      queueingStrategy: c.strict ? QueueingStrategy.QUEUEING_STRATEGY_STRICT_FIFO : QueueingStrategy.QUEUEING_STRATEGY_BEST_EFFORT_FIFO,
      withinClusterQueue: c.within,
      reclaimWithinCohort: c.reclaim,
    }),
  );

type Command =
  | { kind: 'submit'; queue: number; whole: number; count: number; size: number; priority: number; together: boolean }
  | { kind: 'cycle' }
  | { kind: 'settle'; aborts: boolean[] }
  | { kind: 'finish'; pick: number }
  | { kind: 'delete'; pick: number };

const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('submit' as const),
      queue: fc.nat(3),
      whole: fc.integer({ min: 1, max: 4 }),
      count: fc.integer({ min: 1, max: 2 }),
      size: fc.integer({ min: 1, max: 2 }),
      priority: fc.integer({ min: 0, max: 3 }),
      together: fc.boolean(),
    }),
  },
  { weight: 3, arbitrary: fc.constant({ kind: 'cycle' as const }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('settle' as const), aborts: fc.array(fc.boolean(), { maxLength: 6 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('finish' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }) },
);

function world(configs: Omit<ClusterQueue, 'name'>[], nodes: number) {
  const pool = h100Pool('h100', nodes);
  const queues = new QueueManager({ poolExists: (p) => p === 'h100' });
  configs.forEach((c, i) => {
    queues.putClusterQueue({ ...c, name: `q${i}` });
    queues.putLocalQueue({ namespace: `ns${i}`, name: 'main', clusterQueue: `q${i}` });
  });
  const placer = new WholeAcceleratorPlacer().addNodes('h100', nodes);
  let clock = Date.UTC(2025, 0, 1);
  const controller = new AdmissionController({ placer, queues, pools: [pool], clock: () => new Date(clock++) });
  return { queues, placer, controller, pool };
}

type World = ReturnType<typeof world>;

/** A failed invariant, naming the workload or queue; cheaper than expect() in a loop run thousands of times. */
function invariant(holds: boolean, message: string): void {
  if (!holds) throw new Error(`invariant broken: ${message}`);
}

function checkInvariants(w: World, configs: Omit<ClusterQueue, 'name'>[], submitted: Set<string>, deleted: Set<string>): void {
  const { controller, placer, queues } = w;
  const holding = new Map<string, number>();
  const holders = new Set<string>();
  const pending = new Map<string, number>();
  for (const key of submitted) {
    const workload = controller.getWorkload(key);
    if (deleted.has(key)) {
      invariant(workload === undefined && !placer.holds(key), `${key} was deleted but is still known or holds devices`);
      continue;
    }
    const status = workload?.status;
    if (!status) throw new Error(`${key} was submitted and not deleted, but is unknown`);
    switch (status.phase) {
      case WorkloadPhase.WORKLOAD_PHASE_ADMITTED:
      case WorkloadPhase.WORKLOAD_PHASE_QUOTA_RESERVED:
        invariant(placer.holds(key), `${key} is ${status.phase} but holds no devices`);
        holders.add(key);
        holding.set(status.clusterQueue, (holding.get(status.clusterQueue) ?? 0) + status.credits);
        break;
      case WorkloadPhase.WORKLOAD_PHASE_PENDING: {
        invariant(!placer.holds(key), `${key} is pending but holds devices`);
        pending.set(status.clusterQueue, (pending.get(status.clusterQueue) ?? 0) + 1);
        const explanation = controller.explainPending(key);
        const stop = explanation.gates.find((g) => !g.passed);
        invariant(!!stop && stop.reason !== '' && stop.message !== '', `${key} is pending without a reason`);
        invariant(explanation.queuePosition >= 1, `${key} is pending without a queue position`);
        break;
      }
      case WorkloadPhase.WORKLOAD_PHASE_FINISHED:
        invariant(!placer.holds(key), `${key} finished but holds devices`);
        break;
      default:
        throw new Error(`${key} has phase ${status.phase}`);
    }
  }
  // The Placer holds devices only for reserved or admitted workloads.
  invariant(placer.heldKeys().length === holders.size, `the Placer holds ${placer.heldKeys().join(',')}, admission ${[...holders].join(',')}`);

  const usage = configs.map((_, i) => queues.usage(`q${i}`));
  configs.forEach((c, i) => {
    const u = usage[i];
    invariant(u.admittedCredits === (holding.get(`q${i}`) ?? 0), `q${i} counts ${u.admittedCredits} credits, its workloads hold ${holding.get(`q${i}`) ?? 0}`);
    invariant(u.pendingWorkloads === (pending.get(`q${i}`) ?? 0), `q${i} counts ${u.pendingWorkloads} pending, there are ${pending.get(`q${i}`) ?? 0}`);
    const borrowable = c.cohort === '' ? 0 : (c.borrowingLimit ?? Number.POSITIVE_INFINITY);
    invariant(u.admittedCredits <= c.nominalQuota + borrowable, `q${i} holds ${u.admittedCredits} > nominal ${c.nominalQuota} + borrowable ${borrowable}`);
  });
  for (const cohort of ['c1', 'c2']) {
    const members = configs.map((c, i) => ({ c, u: usage[i] })).filter((m) => m.c.cohort === cohort);
    const used = members.reduce((s, m) => s + m.u.admittedCredits, 0);
    const nominal = members.reduce((s, m) => s + m.c.nominalQuota, 0);
    invariant(used <= nominal, `cohort ${cohort} holds ${used} > its nominal total ${nominal}`);
    for (const lender of members) {
      if (lender.c.lendingLimit === undefined) continue;
      const others = members.filter((m) => m !== lender);
      const othersUsed = others.reduce((s, m) => s + m.u.admittedCredits, 0);
      const othersNominal = others.reduce((s, m) => s + m.c.nominalQuota, 0);
      invariant(othersUsed <= othersNominal + lender.c.lendingLimit, `cohort ${cohort} borrowed more than a lendingLimit of ${lender.c.lendingLimit}`);
    }
  }
}

describe('admission properties', () => {
  it('never exceeds quota and accounts for every workload exactly once, across a restart', () => {
    fc.assert(
      fc.property(fc.array(queueConfig, { minLength: 2, maxLength: 4 }), fc.integer({ min: 1, max: 3 }), fc.array(command, { minLength: 5, maxLength: 60, size: 'max' }), (configs, nodes, commands) => {
        const w = world(configs, nodes);
        const submitted = new Set<string>();
        const deleted = new Set<string>();
        let inFlight: AdmitDecision[] = [];
        let n = 0;
        const live = () => [...submitted].filter((k) => !deleted.has(k));
        for (const c of commands) {
          switch (c.kind) {
            case 'submit': {
              const queue = c.queue % configs.length;
              const spec = wholeWorkload(`w${n++}`, {
                namespace: `ns${queue}`,
                whole: c.whole,
                count: c.count,
                size: c.size,
                priority: c.priority,
                requiredLevel: c.together && c.whole * c.size <= 8 ? 'node' : '',
              });
              const result = w.controller.submit(spec);
              if (result.accepted) submitted.add(keyOfSpec(spec));
              else expect(result.problems.length).toBeGreaterThan(0);
              break;
            }
            case 'cycle':
              for (const d of w.controller.cycle().decisions) if (d.kind === 'admit') inFlight.push(d);
              break;
            case 'settle':
              inFlight.forEach((d, i) => {
                if (c.aborts[i] && w.controller.getWorkload(d.key)?.status?.phase === WorkloadPhase.WORKLOAD_PHASE_QUOTA_RESERVED) {
                  w.controller.abortAdmission(d.key, 'conflict');
                } else {
                  w.controller.confirmAdmission(d.key);
                }
              });
              inFlight = [];
              break;
            case 'finish':
            case 'delete': {
              const keys = live();
              if (keys.length === 0) break;
              const key = keys[c.pick % keys.length];
              if (c.kind === 'delete') {
                w.controller.delete(key);
                deleted.add(key);
              } else if (w.controller.getWorkload(key)?.status?.phase !== WorkloadPhase.WORKLOAD_PHASE_FINISHED) {
                w.controller.finish(key);
              }
              break;
            }
          }
          checkInvariants(w, configs, submitted, deleted);
        }

        // Leader takeover: settle the ledger writes, then rebuild from the stored workloads.
        for (const d of inFlight) w.controller.confirmAdmission(d.key);
        const stored = w.controller.listWorkloads();
        const fresh = world(configs, nodes);
        const restored = fresh.controller.restore(stored);
        expect(restored.warnings).toEqual([]);
        configs.forEach((_, i) => expect(fresh.queues.usage(`q${i}`)).toEqual(w.queues.usage(`q${i}`)));
        expect(fresh.placer.usedAccelerators('h100')).toBe(w.placer.usedAccelerators('h100'));
        fresh.controller.cycle();
        checkInvariants(fresh, configs, submitted, deleted);
      }),
      { numRuns: 400 },
    );
  });
});
