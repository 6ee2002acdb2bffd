import { podPlacement } from '../placement/__fixtures__/fleet';
import { ledgerAllocations } from './ledger-allocations';

describe('ledgerAllocations', () => {
  it('an empty ledger allocates nothing but zero vCPU and memory', () => {
    expect(ledgerAllocations({ node: 'n1', entries: [] })).toEqual({ vcpu: 0, memoryMib: 0 });
  });

  it('whole accelerators, shared tokens, slices and MIG partitions each land in their mode', () => {
    const allocations = ledgerAllocations({
      node: 'n1',
      entries: [
        { workload: 'a/train', pod: podPlacement('n1', { ids: ['nvidia-0', 'nvidia-1'], vcpu: 32, memoryMib: 1024 }) },
        { workload: 'a/chat', pod: podPlacement('n1', { ids: ['nvidia-2'], tokens: 3, vcpu: 2 }) },
        { workload: 'b/chat', pod: podPlacement('n1', { ids: ['nvidia-2'], tokens: 4 }) },
        { workload: 'b/embed', pod: podPlacement('n1', { ids: ['nvidia-3'], sliceMemoryMib: 20_480, sliceCoresPercent: 25 }) },
        { workload: 'c/embed', pod: podPlacement('n1', { ids: ['nvidia-3'], sliceMemoryMib: 10_240, sliceCoresPercent: 10 }) },
        { workload: 'c/mig', pod: podPlacement('n1', { partition: { acceleratorId: 'nvidia-4', profile: 'MIG 3g.40gb', start: 4 } }) },
      ],
    });
    expect(allocations).toEqual({
      vcpu: 34,
      memoryMib: 1024,
      accelerators: {
        'nvidia-0': { mode: 'whole' },
        'nvidia-1': { mode: 'whole' },
        'nvidia-2': { mode: 'shared', tokens: 7 },
        'nvidia-3': {
          mode: 'sliced',
          slices: [
            { memoryMib: 20_480, coresPercent: 25 },
            { memoryMib: 10_240, coresPercent: 10 },
          ],
        },
      },
      migPartitions: [{ acceleratorId: 'nvidia-4', profile: '3g.40gb', start: 4 }],
    });
  });

  it('a conflicting ledger reports a contested accelerator in the mode that frees least (whole)', () => {
    const allocations = ledgerAllocations({
      node: 'n1',
      entries: [
        { workload: 'a/x', pod: podPlacement('n1', { ids: ['nvidia-0'], tokens: 2 }) },
        { workload: 'a/y', pod: podPlacement('n1', { ids: ['nvidia-0'] }) },
      ],
    });
    expect(allocations.accelerators).toEqual({ 'nvidia-0': { mode: 'whole' } });
  });

  it('CPU-only pods count vCPU and memory only', () => {
    const allocations = ledgerAllocations({ node: 'n1', entries: [{ workload: 'a/cpu', pod: podPlacement('n1', { vcpu: 4, memoryMib: 8192 }) }] });
    expect(allocations).toEqual({ vcpu: 4, memoryMib: 8192 });
  });
});
