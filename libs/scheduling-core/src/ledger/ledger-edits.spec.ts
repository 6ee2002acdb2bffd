import { podPlacement } from '../placement/__fixtures__/fleet';
import { emptyLedger, ledgerWithoutWorkload, ledgerWithWorkload, ledgerWorkloads } from './ledger-edits';

describe('ledger edits', () => {
  it('adding a workload keeps only its pods on this node, sorted by workload then pod', () => {
    const ledger = ledgerWithWorkload(emptyLedger('n1'), 'b/serve', [
      podPlacement('n1', { replica: 1, ids: ['nvidia-1'] }),
      podPlacement('n2', { replica: 0, ids: ['nvidia-0'] }),
      podPlacement('n1', { replica: 0, ids: ['nvidia-0'] }),
    ]);
    const withA = ledgerWithWorkload(ledger, 'a/train', [podPlacement('n1', { ids: ['nvidia-2'] })]);
    expect(withA.entries.map((e) => [e.workload, e.pod?.replica])).toEqual([
      ['a/train', 0],
      ['b/serve', 0],
      ['b/serve', 1],
    ]);
    expect(ledgerWorkloads(withA)).toEqual(['a/train', 'b/serve']);
  });

  it('re-adding the same workload replaces its entries (a retried write is harmless)', () => {
    const pods = [podPlacement('n1', { ids: ['nvidia-0'] })];
    const once = ledgerWithWorkload(emptyLedger('n1'), 'a/train', pods);
    expect(ledgerWithWorkload(once, 'a/train', pods)).toEqual(once);
  });

  it('edits return new ledgers and never change the one given (for compare-and-set writes)', () => {
    const pod = podPlacement('n1', { ids: ['nvidia-0'] });
    const before = ledgerWithWorkload(emptyLedger('n1'), 'a/train', [pod]);
    const snapshot = JSON.stringify(before);
    const after = ledgerWithoutWorkload(before, 'a/train');
    pod.acceleratorIds.push('nvidia-9');
    expect(after.entries).toEqual([]);
    expect(JSON.stringify(before)).toBe(snapshot);
  });
});
