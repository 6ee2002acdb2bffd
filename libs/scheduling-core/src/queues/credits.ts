/**
 * Credits: the one unit quota is counted in. One accelerator for an hour is 1,600,000 credits;
 * a fraction of one costs its fraction, and a CPU-only pod pays per vCPU. Prices are per pod,
 * rounded up to whole credits, then multiplied by the pods of the pod set.
 */
import type { PodResources, WorkloadSpec } from '@gpufleet/contracts';
import { CREDITS_PER_ACCELERATOR, CREDITS_PER_VCPU, SHARED_TOKENS_PER_ACCELERATOR } from '@gpufleet/capacity-core';
import { migProfileIndex } from '@gpufleet/device-inventory';
import { PoolShape } from '../validation/pool-shape';

/**
 * Credits per hour of one pod. Accelerator pods pay for the accelerator share only (their vCPU
 * and memory come with it); a slice pays for the larger of its memory and compute fractions,
 * since either one keeps the rest of the accelerator from others.
 */
export function podCredits(resources: PodResources, pool: PoolShape): number {
  const a = resources.accelerator;
  if (!a) return Math.ceil(resources.vcpu * CREDITS_PER_VCPU);
  if (a.whole !== undefined) return a.whole * CREDITS_PER_ACCELERATOR;
  if (a.sharedTokens !== undefined) return Math.ceil((a.sharedTokens / SHARED_TOKENS_PER_ACCELERATOR) * CREDITS_PER_ACCELERATOR);
  if (a.slice !== undefined) {
    const memoryFraction =
      a.slice.memoryPercent !== undefined
        ? a.slice.memoryPercent / 100
        : pool.acceleratorMemoryMib > 0
          ? Math.min(1, (a.slice.memoryMib ?? 0) / pool.acceleratorMemoryMib)
          : 1;
    const fraction = Math.max(memoryFraction, a.slice.coresPercent / 100);
    return Math.ceil(fraction * CREDITS_PER_ACCELERATOR);
  }
  if (a.partitionProfile !== undefined) {
    const geometry = pool.migGeometry;
    const profile = geometry?.profiles[migProfileIndex(geometry, a.partitionProfile)];
    if (!geometry || !profile) {
      throw new Error(`INVALID_ARGUMENT: pool ${pool.name} offers no MIG profile ${JSON.stringify(a.partitionProfile)}; validate the workload first`);
    }
    // Priced by compute slices: a 3g instance of a 7g GPU is 3/7 of the accelerator.
    return Math.ceil((profile.computeSlices / geometry.computeSlices) * CREDITS_PER_ACCELERATOR);
  }
  return Math.ceil(resources.vcpu * CREDITS_PER_VCPU);
}

/** Credits per hour of the whole workload: every pod of every replica of every pod set. */
export function workloadCredits(spec: WorkloadSpec, pool: PoolShape): number {
  let total = 0;
  for (const podSet of spec.podSets) {
    if (!podSet.resources) continue;
    total += podCredits(podSet.resources, pool) * podSet.size * podSet.count;
  }
  return total;
}
