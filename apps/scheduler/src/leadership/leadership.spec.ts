import { followTerm, Leadership } from './leadership';

describe('Leadership', () => {
  it('tells listeners of every change of the term, and of nothing else', () => {
    const leadership = new Leadership();
    const seen: number[] = [];
    const off = leadership.onChange((term) => seen.push(term));
    leadership.acquired(3);
    leadership.acquired(3); // a renewal in the same term is no change
    leadership.lost();
    leadership.lost();
    leadership.acquired(5);
    leadership.acquired(6); // a new term without losing in between
    off();
    leadership.lost();
    expect(seen).toEqual([3, 0, 5, 6]);
  });
});

describe('followTerm', () => {
  it('leads at once when the replica already leads, steps down before leading the next term, and stops following', () => {
    const leadership = new Leadership();
    leadership.acquired(1);
    const calls: string[] = [];
    const off = followTerm(leadership, { lead: (term) => calls.push(`lead ${term}`), stepDown: () => calls.push('step down') });
    leadership.acquired(2);
    leadership.lost();
    leadership.lost();
    leadership.acquired(4);
    off();
    leadership.lost();
    expect(calls).toEqual(['lead 1', 'step down', 'lead 2', 'step down', 'lead 4']);
  });

  it('does nothing for a replica that never leads', () => {
    const calls: string[] = [];
    followTerm(new Leadership(), { lead: () => calls.push('lead'), stepDown: () => calls.push('step down') });
    expect(calls).toEqual([]);
  });
});
