import type { NodeInventory, PodPlacement } from '@gpufleet/contracts';
import { normalizeMigProfileName } from '@gpufleet/device-inventory/catalog';
import { resolvePodDevices } from '@gpufleet/node-runtime-core';
import { RESOURCE_DOMAIN, resourceName } from '@gpufleet/device-plugin-core';
import { vendorName, type AcceleratorVendorName } from '@gpufleet/process-spec';

/** True for a resource the device plugin of apps/device-discovery advertises (`gpufleet.io/…`). */
export function isDeviceResource(resource: string): boolean {
  return resource.startsWith(`${RESOURCE_DOMAIN}/`);
}

export interface DeviceResource {
  /** e.g. `gpufleet.io/nvidia-gpu`, `gpufleet.io/nvidia-mig-3g.40gb`. */
  readonly name: string;
  /** Requested and limited alike (Kubernetes refuses an extended resource whose request differs from its limit). */
  readonly quantity: number;
}

/**
 * The one mapping from a placement to what the pod asks the device plugin for; undefined for a
 * CPU-only pod. The names are the device plugin's own (`resourceName` of device-plugin-core), so
 * what a Pod asks for is what the agent advertises:
 *
 * | placement | resource | quantity |
 * | --- | --- | --- |
 * | whole accelerators | `gpufleet.io/<vendor>-gpu` (`ascend-npu`) | how many |
 * | shared tokens on one accelerator | `gpufleet.io/<vendor>-gpu-shared` | the tokens (10 = one accelerator) |
 * | a slice of one accelerator | `gpufleet.io/<vendor>-gpu-slice` | 1 (memory and cores are in the devices annotation) |
 * | a MIG partition | `gpufleet.io/nvidia-mig-<profile>`, e.g. `gpufleet.io/nvidia-mig-3g.40gb` | 1 |
 *
 * `vendor` is the accelerators' (from the node's inventory); NVIDIA when it is not known.
 */
export function deviceResourceOf(
  placement: Pick<PodPlacement, 'acceleratorIds' | 'sharedTokens' | 'sliceMemoryMib' | 'sliceCoresPercent' | 'partition'>,
  vendor: AcceleratorVendorName = 'nvidia',
): DeviceResource | undefined {
  if (placement.partition) return { name: migResourceName(placement.partition.profile), quantity: 1 };
  if (placement.acceleratorIds.length === 0) return undefined;
  if (placement.sharedTokens > 0) return { name: resourceName(vendor, 'shared'), quantity: placement.sharedTokens };
  if (placement.sliceMemoryMib > 0 || placement.sliceCoresPercent > 0) return { name: resourceName(vendor, 'slice'), quantity: 1 };
  return { name: resourceName(vendor, 'whole'), quantity: placement.acceleratorIds.length };
}

/** The resource of a MIG profile: lower-cased, "+me" written ".me" (`1g.10gb+me` → `gpufleet.io/nvidia-mig-1g.10gb.me`). */
export function migResourceName(profile: string): string {
  return resourceName('nvidia', 'mig', normalizeMigProfileName(profile).replace(/[^a-z0-9._-]+/g, '.').replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, ''));
}

/** The vendor of the placement's accelerators on the node; undefined for a CPU-only pod or an unknown id. */
export function vendorOfPlacement(placement: Pick<PodPlacement, 'acceleratorIds' | 'partition'>, inventory: NodeInventory): AcceleratorVendorName | undefined {
  const id = placement.partition?.acceleratorId ?? placement.acceleratorIds[0];
  const accelerator = id === undefined ? undefined : inventory.accelerators.find((a) => a.id === id);
  return accelerator ? vendorName(accelerator.vendor) : undefined;
}

/** One accelerator of an assignment, as the device plugin knows it (by UUID). */
export interface AssignedAccelerator {
  /** The inventory id, e.g. `nvidia-3`. */
  readonly id: string;
  readonly index: number;
  readonly uuid: string;
}

/**
 * The value of the `gpufleet.io/devices` annotation: exactly the devices the scheduler's ledger
 * gave the pod, so the device plugin's Allocate hands over those and no others.
 */
export interface DeviceAssignment {
  readonly resource: string;
  readonly vendor: string;
  readonly accelerators: readonly AssignedAccelerator[];
  readonly sharedTokens?: number;
  readonly slice?: { readonly memoryMib: number; readonly coresPercent: number };
  readonly mig?: { readonly acceleratorId: string; readonly profile: string; readonly start: number; readonly uuid: string };
}

/**
 * The assignment of a placement on its node's inventory (UUIDs from the inventory); undefined for
 * a CPU-only pod. Throws node-runtime-core's `PodPlanError` (UNKNOWN_ACCELERATOR,
 * MIG_PARTITION_MISSING, INVALID_DEVICES) as the process runtime does for the same placement.
 */
export function deviceAssignmentOf(placement: PodPlacement, inventory: NodeInventory): DeviceAssignment | undefined {
  const resource = deviceResourceOf(placement, vendorOfPlacement(placement, inventory));
  if (!resource) return undefined;
  const devices = resolvePodDevices(placement, inventory);
  const byId = new Map(inventory.accelerators.map((a) => [a.id, a]));
  const ids = placement.partition ? [placement.partition.acceleratorId] : placement.acceleratorIds;
  const accelerators = ids.map((id) => {
    const a = byId.get(id)!;
    return { id, index: a.index, uuid: a.uuid };
  });
  const vendor = devices.allocation ? vendorName(devices.allocation.vendor) : '';
  const out: { -readonly [K in keyof DeviceAssignment]: DeviceAssignment[K] } = { resource: resource.name, vendor, accelerators };
  if (placement.sharedTokens > 0) out.sharedTokens = placement.sharedTokens;
  if (resource.name.endsWith('-slice')) out.slice = { memoryMib: placement.sliceMemoryMib, coresPercent: placement.sliceCoresPercent };
  if (placement.partition) {
    out.mig = { acceleratorId: placement.partition.acceleratorId, profile: normalizeMigProfileName(placement.partition.profile), start: placement.partition.start, uuid: devices.engineIds[0] };
  }
  return out;
}
