// Builders for placement specs: requests, ledger entries and engines over realistic nodes
// (HGX with NVSwitch, PCIe boxes, MIG GPUs, from @gpufleet/testing); override what the scenario
// is about.
import { NodeInventory, PodPlacement, PodSet } from '@gpufleet/contracts';
import type { Packing, PlacementRequest } from '../../placer';
import { PlacementEngine } from '../placement-engine';

export { A100, link, migDevice, nic, node, type NodeOptions } from '@gpufleet/testing';

export const POOL = 'h100';

export interface PodSetOptions {
  name?: string;
  count?: number;
  size?: number;
  required?: string;
  preferred?: string;
  vcpu?: number;
  /** MiB */
  memoryMib?: number;
}

function podSet(accelerator: NonNullable<PodSet['resources']>['accelerator'], o: PodSetOptions): PodSet {
  return {
    name: o.name ?? 'main',
    count: o.count ?? 1,
    size: o.size ?? 1,
    resources: { accelerator, vcpu: o.vcpu ?? 0, memoryMib: o.memoryMib ?? 0 },
    topology: { requiredLevel: o.required ?? '', preferredLevel: o.preferred ?? '' },
  };
}

const none = { whole: undefined, sharedTokens: undefined, slice: undefined, partitionProfile: undefined };

export const whole = (n: number, o: PodSetOptions = {}): PodSet => podSet({ ...none, whole: n }, o);
export const shared = (tokens: number, o: PodSetOptions = {}): PodSet => podSet({ ...none, sharedTokens: tokens }, o);
export const slice = (s: { memoryMib?: number; memoryPercent?: number; coresPercent: number }, o: PodSetOptions = {}): PodSet =>
  podSet({ ...none, slice: { memoryMib: s.memoryMib, memoryPercent: s.memoryPercent, coresPercent: s.coresPercent } }, o);
export const partition = (profile: string, o: PodSetOptions = {}): PodSet => podSet({ ...none, partitionProfile: profile }, o);
export const hostOnly = (o: PodSetOptions = {}): PodSet => podSet(undefined, o);

export function request(key: string, podSets: PodSet[], packing: Packing = 'binpack', pool = POOL): PlacementRequest {
  return { key, pool, podSets, packing };
}

export interface PodOptions {
  podSet?: string;
  replica?: number;
  pod?: number;
  ids?: string[];
  tokens?: number;
  sliceMemoryMib?: number;
  sliceCoresPercent?: number;
  partition?: { acceleratorId: string; profile: string; start: number };
  vcpu?: number;
  memoryMib?: number;
}

/** A PodPlacement as a ledger entry holds it. */
export function podPlacement(nodeName: string, o: PodOptions = {}): PodPlacement {
  return {
    podSet: o.podSet ?? 'main',
    replica: o.replica ?? 0,
    pod: o.pod ?? 0,
    node: nodeName,
    acceleratorIds: o.ids ?? [],
    sharedTokens: o.tokens ?? 0,
    sliceMemoryMib: o.sliceMemoryMib ?? 0,
    sliceCoresPercent: o.sliceCoresPercent ?? 0,
    partition: o.partition,
    vcpu: o.vcpu ?? 0,
    memoryMib: o.memoryMib ?? 0,
  };
}

/** An engine with these nodes, all Ready, in pool POOL. */
export function engineWith(...inventories: NodeInventory[]): PlacementEngine {
  const engine = new PlacementEngine();
  for (const inventory of inventories) engine.upsertNode(inventory, true, POOL);
  return engine;
}

/** tryPlace + commit; the placements, or a thrown error with the failure message. */
export function admit(engine: PlacementEngine, placement: PlacementRequest): PodPlacement[] {
  const outcome = engine.tryPlace(placement);
  if (!outcome.ok) throw new Error(`${outcome.reason}: ${outcome.message}`);
  engine.commit(placement.key, outcome.placements);
  return outcome.placements;
}

/** "node:id,id" per pod, for compact expectations. */
export function where(placements: readonly PodPlacement[]): string[] {
  return placements.map((p) => {
    const devices = p.partition ? `${p.partition.acceleratorId}@${p.partition.profile}:${p.partition.start}` : p.acceleratorIds.join(',');
    return `${p.node}:${devices}`;
  });
}
