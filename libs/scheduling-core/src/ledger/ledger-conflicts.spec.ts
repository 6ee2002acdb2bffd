import type { NodeLedger, PodPlacement } from '@gpufleet/contracts';
import { A100, migDevice, node, podPlacement, PodOptions } from '../placement/__fixtures__/fleet';
import { ledgerConflicts } from './ledger-conflicts';

function ledgerOf(entries: [string, PodOptions][], nodeName = 'n1'): NodeLedger {
  return {
    node: nodeName,
    entries: entries.map(([workload, options], i) => ({ workload, pod: podPlacement(nodeName, { replica: i, ...options }) as PodPlacement })),
  };
}

const h100 = node('n1', { gpus: 4, logicalCpus: 64, nodeMemoryMib: 100_000 });
const migNode = node('n1', { gpus: 2, product: A100, mig: { 0: [migDevice('3g.40gb', 0, 4)], 1: [] } });

describe('ledgerConflicts', () => {
  it('a consistent ledger has none', () => {
    const ledger = ledgerOf([
      ['a/x', { ids: ['nvidia-0', 'nvidia-1'], vcpu: 32 }],
      ['a/y', { ids: ['nvidia-2'], tokens: 6 }],
      ['b/y', { ids: ['nvidia-2'], tokens: 4 }],
      ['b/z', { ids: ['nvidia-3'], sliceMemoryMib: 40_000, sliceCoresPercent: 50, vcpu: 32, memoryMib: 100_000 }],
    ]);
    expect(ledgerConflicts(ledger, h100)).toEqual([]);
  });

  it('two pods holding the same whole accelerator', () => {
    const problems = ledgerConflicts(ledgerOf([['a/x', { ids: ['nvidia-0'] }], ['b/y', { ids: ['nvidia-0', 'nvidia-1'] }]]), h100);
    expect(problems).toEqual([expect.stringMatching(/accelerator nvidia-0 of node n1 is held whole by 2 pods: a\/x pod main\/0\/0, b\/y pod main\/1\/0/)]);
  });

  it('shared tokens over 10 on one accelerator', () => {
    const problems = ledgerConflicts(ledgerOf([['a/x', { ids: ['nvidia-0'], tokens: 6 }], ['b/y', { ids: ['nvidia-0'], tokens: 5 }]]), h100);
    expect(problems).toEqual([expect.stringContaining('has 11 shared tokens handed out of 10')]);
  });

  it('slices over the accelerator memory or over 100 % compute', () => {
    const problems = ledgerConflicts(
      ledgerOf([
        ['a/x', { ids: ['nvidia-0'], sliceMemoryMib: 50_000, sliceCoresPercent: 60 }],
        ['b/y', { ids: ['nvidia-0'], sliceMemoryMib: 40_000, sliceCoresPercent: 50 }],
      ]),
      h100,
    );
    expect(problems).toEqual([expect.stringContaining('hold 90000 MiB of its 81920 MiB'), expect.stringContaining('hold 110% of its compute')]);
  });

  it('an accelerator used in two modes at once', () => {
    const problems = ledgerConflicts(ledgerOf([['a/x', { ids: ['nvidia-0'] }], ['b/y', { ids: ['nvidia-0'], tokens: 2 }]]), h100);
    expect(problems).toEqual([expect.stringContaining('is held in several modes at once: whole by a/x pod main/0/0; shared by b/y pod main/1/0')]);
  });

  it('overlapping MIG partitions, and a partition over an existing one of another profile', () => {
    const problems = ledgerConflicts(
      ledgerOf([
        ['a/x', { partition: { acceleratorId: 'nvidia-1', profile: '3g.40gb', start: 4 } }],
        ['b/y', { partition: { acceleratorId: 'nvidia-1', profile: '2g.20gb', start: 4 } }],
        ['c/z', { partition: { acceleratorId: 'nvidia-0', profile: '1g.10gb', start: 1 } }],
      ]),
      migNode,
    );
    expect(problems).toEqual([
      expect.stringContaining('partitions 3g.40gb@4 (a/x pod main/0/0) and 2g.20gb@4 (b/y pod main/1/0) of accelerator nvidia-1 of node n1 overlap'),
      expect.stringContaining('c/z pod main/2/0 holds 1g.10gb@1 on accelerator nvidia-0 of node n1, over the existing partition 3g.40gb@0'),
    ]);
  });

  it('holding an existing partition at its own profile and start is that partition, not an overlap', () => {
    const ledger = ledgerOf([['a/x', { partition: { acceleratorId: 'nvidia-0', profile: '3g.40gb', start: 0 } }]]);
    expect(ledgerConflicts(ledger, migNode)).toEqual([]);
  });

  it('two pods on the same existing partition', () => {
    const ledger = ledgerOf([
      ['a/x', { partition: { acceleratorId: 'nvidia-0', profile: '3g.40gb', start: 0 } }],
      ['b/y', { partition: { acceleratorId: 'nvidia-0', profile: '3g.40gb', start: 0 } }],
    ]);
    expect(ledgerConflicts(ledger, migNode)).toEqual([expect.stringContaining('overlap')]);
  });

  it('invalid MIG starts, unknown profiles, and partitions of a GPU without MIG', () => {
    const problems = ledgerConflicts(
      ledgerOf([
        ['a/x', { partition: { acceleratorId: 'nvidia-1', profile: '3g.40gb', start: 2 } }],
        ['b/y', { partition: { acceleratorId: 'nvidia-1', profile: '5g.50gb', start: 0 } }],
      ]),
      migNode,
    );
    expect(problems).toEqual([expect.stringContaining('3g.40gb may start only at 0, 4'), expect.stringContaining('a profile A100-80GB does not offer')]);
    expect(ledgerConflicts(ledgerOf([['a/x', { partition: { acceleratorId: 'nvidia-0', profile: '3g.40gb', start: 0 } }]]), h100)).toEqual([
      expect.stringContaining('is not MIG-enabled'),
    ]);
  });

  it('whole, shared or sliced use of a MIG-enabled GPU', () => {
    expect(ledgerConflicts(ledgerOf([['a/x', { ids: ['nvidia-1'] }]]), migNode)).toEqual([
      expect.stringContaining('accelerator nvidia-1 of node n1 is MIG-enabled but is held whole by a/x pod main/0/0'),
    ]);
  });

  it('unknown accelerators, pods listed twice, pods of another node, and CPU or memory over the node', () => {
    const ledger: NodeLedger = {
      node: 'n1',
      entries: [
        { workload: 'a/x', pod: podPlacement('n1', { ids: ['nvidia-9'], vcpu: 40 }) },
        { workload: 'a/x', pod: podPlacement('n1', { vcpu: 40, memoryMib: 200_000 }) },
        { workload: 'b/y', pod: podPlacement('n2') },
        { workload: 'c/z', pod: undefined },
      ],
    };
    const problems = ledgerConflicts(ledger, h100);
    expect(problems).toHaveLength(6);
    expect(problems).toEqual(
      expect.arrayContaining([
        'an entry of c/z on node n1 has no pod placement',
        'a/x pod main/0/0 holds accelerator nvidia-9, which node n1 does not have',
        'a/x pod main/0/0 is listed twice on node n1',
        'b/y pod main/0/0 names node n2 but is in the ledger of node n1',
        'pods on node n1 hold 80 vCPU of its 64',
        'pods on node n1 hold 200000 MiB of memory of its 100000 MiB',
      ]),
    );
  });
});
