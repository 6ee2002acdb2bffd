/**
 * From a node's ledger to the NodeAllocations the capacity views subtract
 * (`CapacityModel.setAllocations`).
 */
import type { NodeLedger } from '@gpufleet/contracts';
import type { AcceleratorAllocation, AcceleratorSlice, MigPartitionPlacement, NodeAllocations } from '@gpufleet/capacity-core';
import { podHoldOf } from './pod-hold';

/**
 * A valid ledger gives each accelerator one mode. A conflicting one (see `ledgerConflicts`)
 * may mix them; the accelerator is then reported in the mode that frees the least (whole,
 * then shared, then sliced), so the views never offer what is contested.
 */
export function ledgerAllocations(ledger: NodeLedger): NodeAllocations {
  const whole = new Set<string>();
  const tokens = new Map<string, number>();
  const slices = new Map<string, AcceleratorSlice[]>();
  const migPartitions: MigPartitionPlacement[] = [];
  let vcpu = 0;
  let memoryMib = 0;
  for (const entry of ledger.entries) {
    const pod = entry.pod;
    if (!pod) continue;
    vcpu += pod.vcpu;
    memoryMib += pod.memoryMib;
    const hold = podHoldOf(pod);
    switch (hold.kind) {
      case 'whole':
        for (const id of hold.acceleratorIds) whole.add(id);
        break;
      case 'shared':
        tokens.set(hold.acceleratorId, (tokens.get(hold.acceleratorId) ?? 0) + hold.tokens);
        break;
      case 'slice': {
        const list = slices.get(hold.acceleratorId) ?? [];
        list.push({ memoryMib: hold.memoryMib, coresPercent: hold.coresPercent });
        slices.set(hold.acceleratorId, list);
        break;
      }
      case 'partition':
        migPartitions.push({ acceleratorId: hold.acceleratorId, profile: hold.profile, start: hold.start });
        break;
      case 'host':
        break;
    }
  }
  const accelerators: Record<string, AcceleratorAllocation> = {};
  for (const [id, list] of slices) accelerators[id] = { mode: 'sliced', slices: list };
  for (const [id, count] of tokens) accelerators[id] = { mode: 'shared', tokens: count };
  for (const id of whole) accelerators[id] = { mode: 'whole' };
  const allocations: NodeAllocations = { vcpu, memoryMib };
  return {
    ...allocations,
    ...(Object.keys(accelerators).length > 0 ? { accelerators } : {}),
    ...(migPartitions.length > 0 ? { migPartitions } : {}),
  };
}
