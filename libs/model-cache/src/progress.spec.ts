import { ProgressReporter, type DeliveryProgress } from './progress';

describe('ProgressReporter', () => {
  it('reports at most every interval or step, and exactly one final state', () => {
    let now = 0;
    const seen: DeliveryProgress[] = [];
    const p = new ProgressReporter('sha256:x', 1000, (e) => seen.push(e), { intervalMs: 5000, stepPercent: 5 }, () => now);
    p.start();
    p.add(10); // 1 %, 0 s: too soon
    p.add(40); // 5 %: a step
    now = 6000;
    p.add(1); // 5.1 %, but 6 s later
    p.add(1); // 5.2 %: too soon and too small
    p.ready();
    p.add(5);
    p.failed('Stalled', 'late');
    expect(seen.map((e) => [e.state, e.percent])).toEqual([
      ['Downloading', 0],
      ['Downloading', 5],
      ['Downloading', 5.1],
      ['Ready', 100],
    ]);
  });

  it('ends Failed with its reason, and 100 % for an empty manifest', () => {
    const seen: DeliveryProgress[] = [];
    const p = new ProgressReporter('sha256:x', 0, (e) => seen.push(e));
    p.failed('InsufficientCapacity', 'no room');
    expect(seen).toEqual([{ digest: 'sha256:x', state: 'Failed', bytesDone: 0, bytesTotal: 0, percent: 100, reason: 'InsufficientCapacity', message: 'no room' }]);
  });
});
