import { LedgerEntry, NodeLedger, PodPlacement, Workload, WorkloadPhase } from '@gpufleet/contracts';
import { wholeWorkload } from '../admission/__fixtures__/workloads';
import { emptyStatus } from '../admission/workload-record';
import { PlacementEngine } from '../placement/placement-engine';
import { podPlacement } from '../placement/__fixtures__/fleet';
import { planTakeover, TakeoverPlan } from './takeover';

const { WORKLOAD_PHASE_PENDING: PENDING, WORKLOAD_PHASE_QUOTA_RESERVED: RESERVED, WORKLOAD_PHASE_ADMITTED: ADMITTED, WORKLOAD_PHASE_FINISHED: FINISHED } =
  WorkloadPhase;
const NOW = new Date('2026-11-29T09:00:00Z');
const EARLIER = new Date('2026-11-29T08:00:00Z');

/** A workload "team-a/<name>" of `count` gangs of `size` pods, one GPU each. */
function record(name: string, phase: WorkloadPhase, o: { count?: number; size?: number; placements?: PodPlacement[]; admittedAt?: Date } = {}): Workload {
  return {
    spec: wholeWorkload(name, { count: o.count, size: o.size }),
    status: { ...emptyStatus(), phase, clusterQueue: 'cq', pool: 'h100', placements: o.placements ?? [], admittedAt: o.admittedAt },
  };
}

/** Pod `pod` of replica 0 of `key` on `node`, on GPU nvidia-<gpu>. */
function entry(key: string, node: string, pod: number, gpu = pod): LedgerEntry {
  return { workload: key, pod: podPlacement(node, { pod, ids: [`nvidia-${gpu}`] }) };
}

function ledger(node: string, ...entries: LedgerEntry[]): NodeLedger {
  return { node, entries };
}

/** Plans as the app does: the ledger loaded into a placement engine, placements read from it. */
function plan(workloads: Workload[], ledgers: NodeLedger[]): TakeoverPlan {
  const engine = new PlacementEngine();
  engine.loadLedger(ledgers);
  return planTakeover({ workloads, ledgers, placementsOf: (k) => engine.placementsOf(k), now: NOW });
}

function pods(...entries: LedgerEntry[]): PodPlacement[] {
  return entries.map((e) => e.pod!);
}

describe('planTakeover: what a new leader makes of the records and the ledger', () => {
  it('a leader that died between the ledger commit and the status write: the admission is completed', () => {
    const gang = [entry('team-a/train', 'n1', 0), entry('team-a/train', 'n1', 1), entry('team-a/train', 'n2', 2, 0), entry('team-a/train', 'n2', 3, 1)];
    const pending = record('train', PENDING, { count: 1, size: 4 });
    const { decisions, orphans, restore } = plan([pending], [ledger('n1', gang[0], gang[1]), ledger('n2', gang[2], gang[3])]);

    expect(decisions).toEqual([
      {
        kind: 'complete',
        key: 'team-a/train',
        workload: pending,
        status: { ...pending.status, phase: ADMITTED, placements: pods(...gang), admittedAt: NOW },
        reason: 'the ledger holds it but its status was not written',
      },
    ]);
    expect(restore).toEqual([{ spec: pending.spec, status: { ...pending.status, phase: ADMITTED, placements: pods(...gang), admittedAt: NOW } }]);
    expect(orphans).toEqual([]);
    expect(pending.status?.phase).toBe(PENDING); // the plan is data; the records are not touched
  });

  it('an interrupted admission that already has an admission time keeps it when completed', () => {
    const reserved = record('train', RESERVED, { admittedAt: EARLIER });
    const [d] = plan([reserved], [ledger('n1', entry('team-a/train', 'n1', 0))]).decisions;
    expect(d).toMatchObject({ kind: 'complete', status: { phase: ADMITTED, admittedAt: EARLIER } });
  });

  it('every pod set counts: count × size pods over all of them must be in the ledger to complete', () => {
    const spec = wholeWorkload('mixed');
    spec.podSets = [
      { ...spec.podSets[0], name: 'a', count: 2, size: 1 },
      { ...spec.podSets[0], name: 'b', count: 1, size: 2 },
    ];
    const w: Workload = { spec, status: { ...emptyStatus(), phase: PENDING } };
    const three = [0, 1, 2].map((i) => entry('team-a/mixed', 'n1', i));
    expect(plan([w], [ledger('n1', ...three)]).decisions[0]).toMatchObject({ kind: 'release', reason: 'its status is WORKLOAD_PHASE_PENDING and the ledger holds 3/4 pods' });
    expect(plan([w], [ledger('n1', ...three, entry('team-a/mixed', 'n1', 3))]).decisions[0]).toMatchObject({ kind: 'complete' });
  });

  it('admitted but preempted before the record was written: re-queued', () => {
    const admitted = record('chat', ADMITTED, { placements: pods(entry('team-a/chat', 'n1', 0)), admittedAt: EARLIER });
    const { decisions, restore } = plan([admitted], [ledger('n1', entry('team-a/other', 'n1', 0))]);

    const requeued = { ...admitted.status, phase: PENDING, placements: [], admittedAt: undefined };
    expect(decisions).toEqual([
      { kind: 'requeue', key: 'team-a/chat', workload: admitted, status: requeued, reason: 'recorded as admitted but the ledger holds none of its pods' },
    ]);
    expect(restore).toEqual([{ spec: admitted.spec, status: requeued }]);
  });

  it('half-written gang: released', () => {
    const half = entry('team-a/train', 'n1', 0);
    const pending = record('train', PENDING, { count: 1, size: 2 });
    const { decisions, restore } = plan([pending], [ledger('n1', half)]);

    expect(decisions).toEqual([
      { kind: 'release', key: 'team-a/train', workload: pending, placements: pods(half), reason: 'its status is WORKLOAD_PHASE_PENDING and the ledger holds 1/2 pods' },
    ]);
    expect(restore).toEqual([pending]); // restored as it is: pending, queued again
  });

  it('a ledger holding more pods than the workload has: released', () => {
    const [d] = plan([record('one', RESERVED)], [ledger('n1', entry('team-a/one', 'n1', 0), entry('team-a/one', 'n1', 1))]).decisions;
    expect(d).toMatchObject({ kind: 'release', reason: 'its status is WORKLOAD_PHASE_QUOTA_RESERVED and the ledger holds 2/1 pods' });
  });

  it('ledger entries without a pod name the workload but place nothing: released with no placements', () => {
    const [d] = plan([record('ghost', PENDING)], [ledger('n1', { workload: 'team-a/ghost', pod: undefined })]).decisions;
    expect(d).toEqual(expect.objectContaining({ kind: 'release', placements: [], reason: 'its status is WORKLOAD_PHASE_PENDING and the ledger holds 0/1 pods' }));
  });

  it('finished workload still in the ledger: released, even when the ledger holds all its pods', () => {
    const finished = record('done', FINISHED);
    const held = entry('team-a/done', 'n1', 0);
    const { decisions, restore } = plan([finished], [ledger('n1', held)]);

    expect(decisions).toEqual([
      { kind: 'release', key: 'team-a/done', workload: finished, placements: pods(held), reason: 'its status is WORKLOAD_PHASE_FINISHED and the ledger holds 1/1 pods' },
    ]);
    expect(restore).toEqual([finished]);
  });

  it('ledger entry of a deleted workload: released as an orphan', () => {
    const n1 = entry('team-b/gone', 'n1', 0);
    const n2 = entry('team-b/gone', 'n2', 0);
    const { decisions, orphans, restore } = plan([], [ledger('n1', n1), ledger('n2', n2)]);

    expect(decisions).toEqual([]);
    expect(restore).toEqual([]);
    expect(orphans).toEqual([{ key: 'team-b/gone', placements: pods(n1, n2), reason: 'no such workload' }]);
  });

  it('a record without a status is not restored, and its ledger entries are released as an orphan', () => {
    const noStatus: Workload = { spec: wholeWorkload('half-created'), status: undefined };
    const noSpec: Workload = { spec: undefined, status: emptyStatus() };
    const { decisions, orphans, restore } = plan([noStatus, noSpec], [ledger('n1', entry('team-a/half-created', 'n1', 0))]);

    expect(decisions).toEqual([]);
    expect(restore).toEqual([]);
    expect(orphans).toEqual([expect.objectContaining({ key: 'team-a/half-created', reason: 'no such workload' })]);
  });

  it('consistent state: nothing changes', () => {
    const held = [entry('team-a/running', 'n1', 0), entry('team-a/running', 'n1', 1)];
    const running = record('running', ADMITTED, { count: 2, placements: pods(...held), admittedAt: EARLIER });
    const waiting = record('waiting', PENDING);
    const done = record('done', FINISHED);
    const { decisions, orphans, restore } = plan([running, waiting, done], [ledger('n1', ...held)]);

    expect(decisions).toEqual([
      { kind: 'keep', key: 'team-a/running', workload: running },
      { kind: 'keep', key: 'team-a/waiting', workload: waiting },
      { kind: 'keep', key: 'team-a/done', workload: done },
    ]);
    expect(orphans).toEqual([]);
    expect(restore).toEqual([running, waiting, done]);
    restore.forEach((w, i) => expect(w).toBe([running, waiting, done][i]));
  });

  it('an admitted workload of which the ledger holds only part is kept as recorded', () => {
    const admitted = record('train', ADMITTED, { count: 1, size: 2, admittedAt: EARLIER });
    expect(plan([admitted], [ledger('n1', entry('team-a/train', 'n1', 0))]).decisions).toEqual([{ kind: 'keep', key: 'team-a/train', workload: admitted }]);
  });

  it('a mixed takeover: one decision per record in order, orphans in the order the ledgers name them', () => {
    const ledgers = [
      ledger('n1', entry('team-a/complete', 'n1', 0), entry('x/orphan-2', 'n1', 1)),
      ledger('n2', entry('team-a/release', 'n2', 0), entry('x/orphan-1', 'n2', 1)),
    ];
    const records = [record('requeue', ADMITTED), record('complete', PENDING), record('release', PENDING, { count: 2 }), record('keep', PENDING)];
    const { decisions, orphans, restore } = plan(records, ledgers);

    expect(decisions.map((d) => `${d.kind} ${d.key}`)).toEqual(['requeue team-a/requeue', 'complete team-a/complete', 'release team-a/release', 'keep team-a/keep']);
    expect(orphans.map((o) => o.key)).toEqual(['x/orphan-2', 'x/orphan-1']);
    expect(restore.map((w) => `${w.spec?.name} ${w.status?.phase}`)).toEqual([
      `requeue ${PENDING}`,
      `complete ${ADMITTED}`,
      `release ${PENDING}`,
      `keep ${PENDING}`,
    ]);
  });
});
