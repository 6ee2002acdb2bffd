import { PodResources, WorkloadSpec } from '@gpufleet/contracts';
import { cpuPool, h100Pool, wholeWorkload } from '../admission/__fixtures__/workloads';
import { podCredits, workloadCredits } from './credits';

const pool = h100Pool();
const pod = (accelerator: PodResources['accelerator'], vcpu = 8): PodResources => ({ accelerator, vcpu, memoryMib: 1024 });

describe('credits', () => {
  it('prices whole accelerators at 1,600,000 each', () => {
    expect(podCredits(pod({ whole: 4 }), pool)).toBe(6_400_000);
  });

  it('prices shared tokens as tenths of an accelerator', () => {
    expect(podCredits(pod({ sharedTokens: 3 }), pool)).toBe(480_000);
  });

  it('prices a slice by the larger of its memory and compute fractions', () => {
    expect(podCredits(pod({ slice: { memoryPercent: 50, coresPercent: 20 } }), pool)).toBe(800_000);
    expect(podCredits(pod({ slice: { memoryPercent: 10, coresPercent: 30 } }), pool)).toBe(480_000);
    // 20,000 of 81,559 MiB = 0.24522… → ceil(392,354.98)
    expect(podCredits(pod({ slice: { memoryMib: 20_000, coresPercent: 10 } }), pool)).toBe(Math.ceil((20_000 / 81_559) * 1_600_000));
  });

  it('prices a MIG partition by its compute slices over the full GPU', () => {
    // 3g of 7g: 685,714.28… rounded up
    expect(podCredits(pod({ partitionProfile: '3g.40gb' }), pool)).toBe(685_715);
    expect(podCredits(pod({ partitionProfile: '7g.80gb' }), pool)).toBe(1_600_000);
  });

  it('prices CPU-only pods per vCPU', () => {
    expect(podCredits(pod(undefined, 16), cpuPool())).toBe(1_600_000);
  });

  it('multiplies per-pod credits by pods per replica and replicas, over all pod sets', () => {
    const spec: WorkloadSpec = {
      ...wholeWorkload('pd', { whole: 2, count: 3, size: 2 }),
    };
    spec.podSets.push({ name: 'router', count: 1, size: 1, resources: pod({ sharedTokens: 1 }), topology: undefined });
    expect(workloadCredits(spec, pool)).toBe(2 * 1_600_000 * 2 * 3 + 160_000);
  });
});
