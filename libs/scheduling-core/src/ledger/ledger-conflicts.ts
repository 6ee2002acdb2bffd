/**
 * Everything in a node's ledger that hands out more than the node has: the invariant the
 * placement engine keeps ("no accelerator, slice or partition is ever allocated twice"),
 * checked from the ledger and the inventory alone, so tests, takeover and operators can
 * verify it independently of the engine.
 */
import type { Accelerator, NodeInventory, NodeLedger, PodPlacement } from '@gpufleet/contracts';
import { CORES_PERCENT_PER_ACCELERATOR, SHARED_TOKENS_PER_ACCELERATOR } from '@gpufleet/capacity-core';
import { migGeometryForProduct, migProfileIndex, sliceMask } from '@gpufleet/device-inventory';
import { podHoldOf, podLabel } from './pod-hold';

interface PartitionHold {
  who: string;
  profile: string;
  start: number;
  mask: number;
  media: boolean;
}

/** Holds on one accelerator, gathered per mode. */
interface AcceleratorHolds {
  whole: string[];
  shared: { who: string; tokens: number }[];
  slices: { who: string; memoryMib: number; coresPercent: number }[];
  partitions: PartitionHold[];
}

function newHolds(): AcceleratorHolds {
  return { whole: [], shared: [], slices: [], partitions: [] };
}

function holdsOf(byId: Map<string, AcceleratorHolds>, id: string): AcceleratorHolds {
  let holds = byId.get(id);
  if (!holds) {
    holds = newHolds();
    byId.set(id, holds);
  }
  return holds;
}

function list(names: readonly string[]): string {
  return names.join(', ');
}

/** Human-readable problems; empty when the ledger is consistent with the node. */
export function ledgerConflicts(ledger: NodeLedger, inventory: NodeInventory): string[] {
  const problems: string[] = [];
  const node = ledger.node;
  const accelerators = new Map<string, Accelerator>(inventory.accelerators.map((a) => [a.id, a]));
  const byId = new Map<string, AcceleratorHolds>();
  const seenPods = new Set<string>();
  let vcpu = 0;
  let memoryMib = 0;

  for (const entry of ledger.entries) {
    const pod: PodPlacement | undefined = entry.pod;
    if (!pod) {
      problems.push(`an entry of ${entry.workload} on node ${node} has no pod placement`);
      continue;
    }
    const who = podLabel(entry.workload, pod);
    if (pod.node !== node) problems.push(`${who} names node ${pod.node} but is in the ledger of node ${node}`);
    const podKey = `${entry.workload}\u0000${pod.podSet}\u0000${pod.replica}\u0000${pod.pod}`;
    if (seenPods.has(podKey)) problems.push(`${who} is listed twice on node ${node}`);
    seenPods.add(podKey);
    vcpu += pod.vcpu;
    memoryMib += pod.memoryMib;

    const hold = podHoldOf(pod);
    if (hold.kind === 'host') continue;
    const ids = hold.kind === 'whole' ? hold.acceleratorIds : [hold.acceleratorId];
    if (hold.kind === 'whole' && new Set(ids).size !== ids.length) {
      problems.push(`${who} lists accelerator ${list(ids)} with repeats`);
    }
    for (const id of ids) {
      if (!accelerators.has(id)) {
        problems.push(`${who} holds accelerator ${id}, which node ${node} does not have`);
        continue;
      }
      const holds = holdsOf(byId, id);
      switch (hold.kind) {
        case 'whole':
          holds.whole.push(who);
          break;
        case 'shared':
          holds.shared.push({ who, tokens: hold.tokens });
          break;
        case 'slice':
          holds.slices.push({ who, memoryMib: hold.memoryMib, coresPercent: hold.coresPercent });
          break;
        case 'partition':
          holds.partitions.push({ who, profile: hold.profile, start: hold.start, mask: 0, media: false });
          break;
      }
    }
  }

  for (const [id, holds] of byId) {
    problems.push(...acceleratorConflicts(node, accelerators.get(id) as Accelerator, holds));
  }

  const vcpuCapacity = inventory.cpu?.logicalCpus ?? 0;
  if (vcpu > vcpuCapacity) problems.push(`pods on node ${node} hold ${vcpu} vCPU of its ${vcpuCapacity}`);
  const memoryCapacity = inventory.memory?.totalMib ?? 0;
  if (memoryMib > memoryCapacity) {
    problems.push(`pods on node ${node} hold ${memoryMib} MiB of memory of its ${memoryCapacity} MiB`);
  }
  return problems;
}

function acceleratorConflicts(node: string, accelerator: Accelerator, holds: AcceleratorHolds): string[] {
  const problems: string[] = [];
  const where = `accelerator ${accelerator.id} of node ${node}`;
  const modeHolders: [string, string[]][] = [
    ['whole', holds.whole],
    ['shared', holds.shared.map((h) => h.who)],
    ['sliced', holds.slices.map((h) => h.who)],
    ['partitioned', holds.partitions.map((h) => h.who)],
  ];
  const usedModes = modeHolders.filter(([, who]) => who.length > 0);

  if (accelerator.migEnabled) {
    for (const [mode, who] of usedModes) {
      if (mode !== 'partitioned') problems.push(`${where} is MIG-enabled but is held ${mode} by ${list(who)}`);
    }
  } else if (holds.partitions.length > 0) {
    problems.push(`${where} is not MIG-enabled but ${list(holds.partitions.map((p) => p.who))} hold MIG partitions of it`);
  }
  if (usedModes.length > 1) {
    problems.push(`${where} is held in several modes at once: ${usedModes.map(([m, who]) => `${m} by ${list(who)}`).join('; ')}`);
  }
  if (holds.whole.length > 1) problems.push(`${where} is held whole by ${holds.whole.length} pods: ${list(holds.whole)}`);

  const tokens = holds.shared.reduce((sum, h) => sum + h.tokens, 0);
  if (tokens > SHARED_TOKENS_PER_ACCELERATOR) {
    problems.push(
      `${where} has ${tokens} shared tokens handed out of ${SHARED_TOKENS_PER_ACCELERATOR}: ` +
        holds.shared.map((h) => `${h.who} ${h.tokens}`).join(', '),
    );
  }
  const sliceMemory = holds.slices.reduce((sum, h) => sum + h.memoryMib, 0);
  const memory = accelerator.memoryMib ?? 0;
  if (sliceMemory > memory) {
    problems.push(`slices of ${where} hold ${sliceMemory} MiB of its ${memory} MiB: ${list(holds.slices.map((h) => h.who))}`);
  }
  const cores = holds.slices.reduce((sum, h) => sum + h.coresPercent, 0);
  if (cores > CORES_PERCENT_PER_ACCELERATOR) {
    problems.push(`slices of ${where} hold ${cores}% of its compute: ${list(holds.slices.map((h) => h.who))}`);
  }
  if (accelerator.migEnabled && holds.partitions.length > 0) problems.push(...partitionConflicts(where, accelerator, holds.partitions));
  return problems;
}

function partitionConflicts(where: string, accelerator: Accelerator, partitions: PartitionHold[]): string[] {
  const geometry = migGeometryForProduct(accelerator.product, accelerator.memoryMib);
  if (!geometry) return [`${where} has no catalogued MIG geometry, yet ${list(partitions.map((p) => p.who))} hold partitions of it`];
  const problems: string[] = [];
  const valid: PartitionHold[] = [];
  for (const p of partitions) {
    const index = migProfileIndex(geometry, p.profile);
    if (index < 0) {
      problems.push(`${p.who} holds a ${p.profile} partition of ${where}, a profile ${geometry.key} does not offer`);
      continue;
    }
    const profile = geometry.profiles[index];
    if (!profile.starts.includes(p.start) || p.start + profile.size > geometry.memorySlices) {
      problems.push(`${p.who} holds ${p.profile}@${p.start} on ${where}; ${p.profile} may start only at ${profile.starts.join(', ')}`);
      continue;
    }
    valid.push({ ...p, mask: sliceMask(p.start, profile.size), media: profile.mediaExtensions });
  }
  for (let i = 0; i < valid.length; i++) {
    for (let j = i + 1; j < valid.length; j++) {
      const a = valid[i];
      const b = valid[j];
      if ((a.mask & b.mask) !== 0) {
        problems.push(`partitions ${a.profile}@${a.start} (${a.who}) and ${b.profile}@${b.start} (${b.who}) of ${where} overlap`);
      } else if (a.media && b.media) {
        problems.push(`${a.who} and ${b.who} both hold the media engines of ${where} (one "+me" partition per GPU)`);
      }
    }
  }
  // A hold at an existing partition's profile and start is that partition; any other overlap
  // with a partition the node reports is a second owner of its slices.
  for (const device of accelerator.migDevices) {
    if (device.placementStart === undefined) continue;
    const index = migProfileIndex(geometry, device.profile);
    const size = device.placementSize ?? (index >= 0 ? geometry.profiles[index].size : 0);
    const mask = sliceMask(device.placementStart, size);
    for (const p of valid) {
      const same = index >= 0 && migProfileIndex(geometry, p.profile) === index && p.start === device.placementStart;
      if (!same && (p.mask & mask) !== 0) {
        problems.push(`${p.who} holds ${p.profile}@${p.start} on ${where}, over the existing partition ${device.profile}@${device.placementStart}`);
      }
    }
  }
  return problems;
}
