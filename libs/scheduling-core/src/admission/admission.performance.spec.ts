// The scheduler's budget: 50,000 workloads admitted at 10,000 nodes, ≥ 5,000 admissions/s on
// one core. The Placer here is the small test one (constant time per pod), so the figure
// measures the controller's own overhead: queues, quota, fair-sharing order and bookkeeping.
import { QueueManager } from '../queues/queue-manager';
import { AdmissionController } from './admission-controller';
import { WholeAcceleratorPlacer } from './__fixtures__/whole-accelerator-placer';
import { ACCEL, clusterQueue, h100Pool, wholeWorkload } from './__fixtures__/workloads';

const NODES = 10_000;
const WORKLOADS = 50_000;
const QUEUES = 8;

function bigWorld() {
  const pool = h100Pool('h100', NODES);
  const queues = new QueueManager();
  for (let q = 0; q < QUEUES; q++) {
    queues.putClusterQueue(clusterQueue(`q${q}`, { cohort: 'all', nominalQuota: (NODES * 8 * ACCEL) / QUEUES }));
    queues.putLocalQueue({ namespace: `ns${q}`, name: 'main', clusterQueue: `q${q}` });
  }
  const placer = new WholeAcceleratorPlacer().addNodes('h100', NODES);
  const controller = new AdmissionController({ placer, queues, pools: [pool] });
  return { controller, placer, queues };
}

describe('admission throughput', () => {
  it(`admits ${WORKLOADS} workloads at ${NODES} nodes at ≥ 5,000 admissions/s`, () => {
    const { controller } = bigWorld();
    for (let i = 0; i < WORKLOADS; i++) {
      const accepted = controller.submit(wholeWorkload(`w${i}`, { namespace: `ns${i % QUEUES}`, whole: 1 + (i % 2), priority: i % 3 }));
      if (!accepted.accepted) throw new Error(accepted.message);
    }
    const start = process.hrtime.bigint();
    let admitted = 0;
    for (;;) {
      const { decisions } = controller.cycle(undefined, { maxAdmissions: 1_000 });
      if (decisions.length === 0) break;
      for (const d of decisions) if (d.kind === 'admit' && controller.confirmAdmission(d.key, d.placements).ok) admitted++;
    }
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    const rate = admitted / seconds;
    expect(admitted).toBe(WORKLOADS);
    expect(rate).toBeGreaterThanOrEqual(5_000);
  });

  it('a cycle over a full pool with 50,000 blocked workloads does no work', () => {
    const { controller, placer } = bigWorld();
    for (let i = 0; i < NODES; i++) controller.submit(wholeWorkload(`full${i}`, { namespace: `ns${i % QUEUES}`, whole: 8 }));
    for (const d of controller.cycle().decisions) if (d.kind === 'admit') controller.confirmAdmission(d.key);
    for (let i = 0; i < WORKLOADS; i++) controller.submit(wholeWorkload(`w${i}`, { namespace: `ns${i % QUEUES}`, whole: 1 + (i % 4) }));
    const first = controller.cycle();
    expect(first.decisions).toEqual([]);
    const calls = placer.tryPlaceCalls;
    const start = process.hrtime.bigint();
    const again = controller.cycle();
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    expect(again.attempted).toBe(0);
    expect(placer.tryPlaceCalls).toBe(calls);
    expect(ms).toBeLessThan(50);
  });
});
