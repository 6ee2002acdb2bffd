import { normalizeMigProfileName } from '@gpufleet/device-inventory/catalog';
import { devicesEnv, vendorName, type AcceleratorVendorName, type DeviceAllocation } from '@gpufleet/process-spec';
import type { Accelerator, NodeInventory, PodPlacement } from '@gpufleet/contracts';
import { PodPlanError } from './errors';

/** What a pod's placement means on this node: the devices, as the pod's process sees them. */
export interface PodDevices {
  /** Absent for CPU-only pods. */
  readonly allocation: DeviceAllocation | undefined;
  /** The visibility variables (`devicesEnv`): the only devices the pod's processes see. */
  readonly env: Readonly<Record<string, string>>;
  /**
   * The ids an engine is told about (`EngineSpec.acceleratorIds`, `{{gpu_ids}}`): the vendor
   * indexes of whole, shared and sliced accelerators, or the MIG device's UUID. Empty for CPU-only pods.
   */
  readonly engineIds: readonly string[];
  /** Memory one accelerator gives the pod, MiB: the card's, the slice's budget or the MIG device's. */
  readonly acceleratorMemoryMib: number | undefined;
  /** The device nodes a sandbox binds in, relative to /dev (`deviceNodes`). */
  readonly nodes: readonly string[];
}

const NO_DEVICES: PodDevices = Object.freeze({ allocation: undefined, env: Object.freeze(devicesEnv(undefined)), engineIds: [], acceleratorMemoryMib: undefined, nodes: [] });

/**
 * The device nodes (relative to /dev) of `indexes` of one vendor: each device's own node plus
 * the vendor's control nodes, which every process of that vendor opens. A MIG partition gets its
 * GPU's node and the MIG capability directory (`nvidia-caps`): which capability file belongs to
 * which GPU/compute instance is not in the inventory, so all of them are bound (MIG isolation
 * itself is the driver's). AMD render nodes are `renderD<128+index>`, the usual numbering on a
 * host with no other DRM devices.
 */
export function deviceNodes(vendor: AcceleratorVendorName, indexes: readonly number[], mig = false): string[] {
  switch (vendor) {
    case 'nvidia':
      return [...indexes.map((i) => `nvidia${i}`), 'nvidiactl', 'nvidia-uvm', 'nvidia-uvm-tools', 'nvidia-modeset', ...(mig ? ['nvidia-caps'] : [])];
    case 'amd':
      return ['kfd', ...indexes.map((i) => `dri/renderD${128 + i}`)];
    case 'ascend':
      return [...indexes.map((i) => `davinci${i}`), 'davinci_manager', 'devmm_svm', 'hisi_hdc'];
  }
}

/** Every device node of a node's inventory: the placeholders a simulated node gets. */
export function inventoryDeviceNodes(inventory: NodeInventory): string[] {
  const names = new Set<string>();
  for (const a of inventory.accelerators) {
    let vendor: AcceleratorVendorName;
    try {
      vendor = vendorName(a.vendor);
    } catch {
      continue;
    }
    for (const n of deviceNodes(vendor, [a.index], a.migDevices.length > 0)) names.add(n);
  }
  return [...names].sort();
}

/**
 * Maps a placement's accelerator ids ("nvidia-0") and MIG partition onto the node's inventory:
 * vendor, index and UUID of each accelerator, or the UUID of the MIG device with the placed
 * profile and start. Whole pods get all their accelerators, shared and sliced pods their one;
 * a CPU-only pod gets the environment that hides every device. Throws `PodPlanError` for a
 * placement the inventory cannot satisfy.
 */
export function resolvePodDevices(placement: PodPlacement, inventory: NodeInventory): PodDevices {
  const byId = new Map(inventory.accelerators.map((a) => [a.id, a]));
  const lookup = (id: string): Accelerator => {
    const accelerator = byId.get(id);
    if (!accelerator) {
      const known = inventory.accelerators.map((a) => a.id).join(', ') || 'none';
      throw new PodPlanError('UNKNOWN_ACCELERATOR', `accelerator ${id} is not in the inventory of node ${inventory.nodeName} (it has: ${known})`);
    }
    return accelerator;
  };

  if (placement.partition) return partitionDevices(placement.partition, lookup(placement.partition.acceleratorId), inventory.nodeName);
  if (placement.acceleratorIds.length === 0) return NO_DEVICES;

  const accelerators = placement.acceleratorIds.map(lookup);
  const vendors = new Set(accelerators.map((a) => vendorOf(a)));
  if (vendors.size > 1) {
    throw new PodPlanError('INVALID_DEVICES', `pod holds accelerators of several vendors (${[...vendors].join(', ')}); a process can be given one vendor's devices only`);
  }
  const allocation: DeviceAllocation = {
    vendor: vendorOf(accelerators[0]),
    accelerators: accelerators.map((a) => (a.uuid ? { index: a.index, uuid: a.uuid } : { index: a.index })),
  };
  const sliced = placement.sliceMemoryMib > 0 ? placement.sliceMemoryMib : undefined;
  const memories = accelerators.map((a) => a.memoryMib).filter((m): m is number => m !== undefined && m > 0);
  return {
    allocation,
    env: envOf(allocation),
    engineIds: accelerators.map((a) => String(a.index)),
    // A slice's budget is what the pod may use; whole cards: the smallest, which bounds tensor parallelism.
    acceleratorMemoryMib: sliced ?? (memories.length === accelerators.length ? Math.min(...memories) : undefined),
    nodes: deviceNodes(vendorName(allocation.vendor), accelerators.map((a) => a.index)),
  };
}

function partitionDevices(partition: NonNullable<PodPlacement['partition']>, accelerator: Accelerator, node: string): PodDevices {
  const profile = normalizeMigProfileName(partition.profile);
  const mig = accelerator.migDevices.find((m) => normalizeMigProfileName(m.profile) === profile && (m.placementStart ?? -1) === partition.start);
  if (!mig) {
    const existing = accelerator.migDevices.map((m) => `${m.profile}@${m.placementStart ?? '?'}`).join(', ') || 'none';
    throw new PodPlanError(
      'MIG_PARTITION_MISSING',
      `MIG partition ${profile} at start ${partition.start} does not exist on ${accelerator.id} of node ${node} (it has: ${existing}); ` +
        'the pod starts once the partition appears in the inventory',
    );
  }
  if (!mig.uuid) throw new PodPlanError('MIG_PARTITION_MISSING', `MIG partition ${profile} at start ${partition.start} on ${accelerator.id} of node ${node} has no UUID in the inventory`);
  const allocation: DeviceAllocation = { vendor: vendorOf(accelerator), migDevices: [mig.uuid] };
  return { allocation, env: envOf(allocation), engineIds: [mig.uuid], acceleratorMemoryMib: mig.memoryMib, nodes: deviceNodes(vendorName(allocation.vendor), [accelerator.index], true) };
}

function vendorOf(accelerator: Accelerator): AcceleratorVendorName {
  try {
    return vendorName(accelerator.vendor);
  } catch (err) {
    throw new PodPlanError('INVALID_DEVICES', `accelerator ${accelerator.id}: ${(err as Error).message}`);
  }
}

/** devicesEnv's refusals (a MIG UUID of the wrong shape, a bad index) are the pod's, not the runtime's. */
function envOf(allocation: DeviceAllocation): Record<string, string> {
  try {
    return devicesEnv(allocation);
  } catch (err) {
    throw new PodPlanError('INVALID_DEVICES', (err as Error).message);
  }
}
