/**
 * The extended resources a node offers the kubelet: one per vendor and allocation mode, each
 * with its device ids. The mapping is a pure function of the node's inventory and the plugin
 * settings; the agent serves one device plugin per resource.
 */
import { Accelerator, NodeInventory } from '@gpufleet/contracts';
import { SHARED_TOKENS_PER_ACCELERATOR } from '@gpufleet/capacity-core';
import { vendorName, type AcceleratorVendorName } from '@gpufleet/process-spec';
import { DevicePluginError } from './errors';

/** Allocation modes offered on cards without MIG; MIG-enabled cards offer their partitions. */
export type CardMode = 'whole' | 'shared' | 'slice';
export type AllocationMode = CardMode | 'mig';
export const CARD_MODES: readonly CardMode[] = Object.freeze(['whole', 'shared', 'slice']);

/** The domain of every gpufleet extended resource. */
export const RESOURCE_DOMAIN = 'gpufleet.io';

/** The kind of device each vendor's resources are named after. */
const DEVICE_WORD: Record<AcceleratorVendorName, string> = { nvidia: 'gpu', amd: 'gpu', ascend: 'npu' };

export interface DevicePluginSettings {
  /** Modes offered on cards without MIG. Every listed mode offers the same cards (see docs). */
  readonly modes: readonly CardMode[];
  /** Units per card in the shared (time-sliced) mode. */
  readonly sharedReplicas: number;
  /** Units per card in the sliced mode: each is 1/slicesPerCard of the memory and compute. */
  readonly slicesPerCard: number;
}

export const DEFAULT_SETTINGS: DevicePluginSettings = Object.freeze({
  modes: Object.freeze(['whole'] as CardMode[]),
  sharedReplicas: SHARED_TOKENS_PER_ACCELERATOR,
  slicesPerCard: 4,
});

/** One physical accelerator as the plugin sees it. */
export interface PluginCard {
  /** Accelerator id within the node ("nvidia-3"). */
  readonly acceleratorId: string;
  readonly vendor: AcceleratorVendorName;
  /** The vendor tool's index; also the device-node number (/dev/nvidia3, /dev/davinci3). */
  readonly index: number;
  /** UUID as the vendor tool prints it; the accelerator id where it has none. */
  readonly uuid: string;
  /** MiB */
  readonly memoryMib?: number;
  readonly numaNode?: number;
}

/** A MIG partition: GPU instance and compute instance on its parent card. */
export interface PluginMigPartition {
  readonly uuid: string;
  readonly profile: string;
  readonly gpuInstanceId?: number;
  readonly computeInstanceId?: number;
  /** MiB */
  readonly memoryMib?: number;
}

/** One device id of a resource. */
export interface PluginDevice {
  /** As the kubelet sees it: a card UUID, `<uuid>::<k>` for a shared or slice unit, a MIG UUID. */
  readonly id: string;
  readonly card: PluginCard;
  /** The unit number of a shared or slice unit. */
  readonly unit?: number;
  readonly mig?: PluginMigPartition;
}

export interface PluginResource {
  /** e.g. "gpufleet.io/nvidia-gpu". */
  readonly name: string;
  readonly vendor: AcceleratorVendorName;
  readonly mode: AllocationMode;
  /** MIG profile of an "…-mig-<profile>" resource. */
  readonly profile?: string;
  /** Units per card of a shared or slice resource. */
  readonly unitsPerCard?: number;
  readonly devices: readonly PluginDevice[];
}

/** A resource name segment for a MIG profile: "+" is not allowed in resource names ("1g.10gb+me" → "1g.10gb.me"). */
export function migProfileSegment(profile: string): string {
  return profile.replace(/\+/g, '.');
}

export function resourceName(vendor: AcceleratorVendorName, mode: AllocationMode, profile?: string): string {
  if (mode === 'mig') {
    if (vendor !== 'nvidia' || !profile) throw new DevicePluginError('INVALID_ARGUMENT', 'MIG resources exist for NVIDIA GPUs with a profile only');
    return `${RESOURCE_DOMAIN}/nvidia-mig-${migProfileSegment(profile)}`;
  }
  const base = `${RESOURCE_DOMAIN}/${vendor}-${DEVICE_WORD[vendor]}`;
  return mode === 'whole' ? base : `${base}-${mode}`;
}

/** The plugin's socket file in the device-plugins dir: "gpufleet-nvidia-gpu.sock" for "gpufleet.io/nvidia-gpu". */
export function socketNameOf(resource: string): string {
  return `gpufleet-${resource.slice(resource.indexOf('/') + 1)}.sock`;
}

/** `<uuid>::<k>`: unit k of a card in the shared or slice mode. */
export function unitId(uuid: string, unit: number): string {
  return `${uuid}::${unit}`;
}

export function cardOf(accelerator: Accelerator): PluginCard {
  return {
    acceleratorId: accelerator.id,
    vendor: vendorName(accelerator.vendor),
    index: accelerator.index,
    uuid: accelerator.uuid || accelerator.id,
    memoryMib: accelerator.memoryMib,
    numaNode: accelerator.numaNode,
  };
}

function checkSettings(settings: DevicePluginSettings): void {
  for (const [name, value] of [['sharedReplicas', settings.sharedReplicas], ['slicesPerCard', settings.slicesPerCard]] as const) {
    if (!Number.isInteger(value) || value < 1 || value > 1000) {
      throw new DevicePluginError('INVALID_ARGUMENT', `${name} must be an integer between 1 and 1000, got ${value}`);
    }
  }
}

/**
 * The resources of a node, in a stable order (vendor, then whole/shared/slice, then MIG
 * profiles by name). Accelerators of an unknown vendor are left out.
 */
export function resourcesOf(inventory: NodeInventory, settings: DevicePluginSettings = DEFAULT_SETTINGS): PluginResource[] {
  checkSettings(settings);
  const byName = new Map<string, { vendor: AcceleratorVendorName; mode: AllocationMode; profile?: string; unitsPerCard?: number; devices: PluginDevice[] }>();
  const add = (vendor: AcceleratorVendorName, mode: AllocationMode, device: PluginDevice, profile?: string, unitsPerCard?: number): void => {
    const name = resourceName(vendor, mode, profile);
    let resource = byName.get(name);
    if (!resource) byName.set(name, (resource = { vendor, mode, profile, unitsPerCard, devices: [] }));
    resource.devices.push(device);
  };
  const accelerators = [...inventory.accelerators].sort((a, b) => a.index - b.index || a.id.localeCompare(b.id));
  for (const accelerator of accelerators) {
    let card: PluginCard;
    try {
      card = cardOf(accelerator);
    } catch {
      continue;
    }
    if (accelerator.migEnabled) {
      if (card.vendor !== 'nvidia') continue;
      for (const m of accelerator.migDevices) {
        if (!m.uuid || !m.profile) continue;
        const mig: PluginMigPartition = {
          uuid: m.uuid,
          profile: m.profile,
          gpuInstanceId: m.gpuInstanceId,
          computeInstanceId: m.computeInstanceId,
          memoryMib: m.memoryMib,
        };
        add('nvidia', 'mig', { id: m.uuid, card, mig }, m.profile);
      }
      continue;
    }
    for (const mode of settings.modes) {
      if (mode === 'whole') add(card.vendor, 'whole', { id: card.uuid, card });
      else {
        const units = mode === 'shared' ? settings.sharedReplicas : settings.slicesPerCard;
        for (let k = 0; k < units; k++) add(card.vendor, mode, { id: unitId(card.uuid, k), card, unit: k }, undefined, units);
      }
    }
  }
  const vendorOrder: AcceleratorVendorName[] = ['nvidia', 'amd', 'ascend'];
  const modeOrder: AllocationMode[] = ['whole', 'shared', 'slice', 'mig'];
  return [...byName.entries()]
    .map(([name, r]) => ({ name, ...r }))
    .sort(
      (a, b) =>
        vendorOrder.indexOf(a.vendor) - vendorOrder.indexOf(b.vendor) ||
        modeOrder.indexOf(a.mode) - modeOrder.indexOf(b.mode) ||
        a.name.localeCompare(b.name),
    );
}
