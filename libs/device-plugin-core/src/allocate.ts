/**
 * Allocate: what the container runtime must give a container for its device ids: the
 * device-visibility environment (the same as the process runtime's, libs/process-spec), device
 * nodes, mounts and annotations.
 */
import type { deviceplugin } from '@gpufleet/contracts/kubelet';
import { devicesEnv, ProcessRuntimeError, type AcceleratorVendorName } from '@gpufleet/process-spec';
import { DevicePluginError } from './errors';
import { migCapabilityMinor, type MigMinors } from './mig-minors';
import type { PluginCard, PluginDevice, PluginResource } from './resources';

type ContainerAllocateResponse = deviceplugin.ContainerAllocateResponse;
type DeviceSpec = deviceplugin.DeviceSpec;
type Mount = deviceplugin.Mount;

export interface AllocateOptions {
  /** Minors of /dev/nvidia-caps (from /proc/driver/nvidia-caps/mig-minors); the driver's default layout when absent. */
  readonly migMinors?: MigMinors;
}

/** Annotations set on every allocated container. */
export const Annotations = {
  /** Comma-separated device ids of the resource, as the kubelet assigned them. */
  devices: (resource: string) => `${resource}.devices`,
  /** Comma-separated UUIDs of the accelerators behind them. */
  accelerators: 'gpufleet.io/accelerators',
} as const;

const rw = (path: string): DeviceSpec => ({ containerPath: path, hostPath: path, permissions: 'rw' });
const ro = (path: string): Mount => ({ containerPath: path, hostPath: path, readOnly: true });

/** Device nodes every container using the vendor's accelerators needs, besides one per card. */
const CONTROL_NODES: Record<AcceleratorVendorName, readonly string[]> = {
  nvidia: ['/dev/nvidiactl', '/dev/nvidia-uvm', '/dev/nvidia-uvm-tools'],
  amd: ['/dev/kfd'],
  ascend: ['/dev/davinci_manager', '/dev/devmm_svm', '/dev/hisi_hdc'],
};

/** Host paths the Ascend runtime libraries need in the container (driver libraries and npu-smi). */
const ASCEND_MOUNTS: readonly Mount[] = [ro('/usr/local/Ascend/driver'), ro('/usr/local/sbin/npu-smi')];

function cardNodes(card: PluginCard): string[] {
  switch (card.vendor) {
    case 'nvidia':
      return [`/dev/nvidia${card.index}`];
    case 'amd':
      // DRM numbers cards from 0 and render nodes from 128, in the order amdgpu probes them.
      return [`/dev/dri/card${card.index}`, `/dev/dri/renderD${128 + card.index}`];
    case 'ascend':
      return [`/dev/davinci${card.index}`];
  }
}

function lookupAll(resource: PluginResource, ids: readonly string[]): PluginDevice[] {
  if (ids.length === 0) throw new DevicePluginError('INVALID_ARGUMENT', `a container request for ${resource.name} lists no device ids`);
  const byId = new Map(resource.devices.map((d) => [d.id, d]));
  const unknown = ids.filter((id) => !byId.has(id));
  if (unknown.length > 0) {
    throw new DevicePluginError(
      'UNKNOWN_DEVICE',
      `${resource.name} has no device ${unknown.map((id) => `"${id}"`).join(', ')}; the kubelet may hold a device list from before the agent restarted, it gets the current one from ListAndWatch`,
    );
  }
  const seen = new Set<string>();
  for (const id of ids) {
    if (seen.has(id)) throw new DevicePluginError('INVALID_ARGUMENT', `device "${id}" of ${resource.name} is listed twice`);
    seen.add(id);
  }
  return ids.map((id) => byId.get(id) as PluginDevice);
}

function uniqueCards(devices: readonly PluginDevice[]): PluginCard[] {
  const cards = new Map<string, PluginCard>();
  for (const d of devices) cards.set(d.card.acceleratorId, d.card);
  return [...cards.values()].sort((a, b) => a.index - b.index);
}

function visibilityEnv(cards: readonly PluginCard[], migUuids: readonly string[] = []): Record<string, string> {
  const vendor = cards[0].vendor;
  try {
    if (migUuids.length > 0) return devicesEnv({ vendor, migDevices: migUuids });
    // UUIDs, not host indexes: inside the container only the allocated cards are enumerated,
    // so a host index would name the wrong card (or none). Ascend has logical ids only.
    const byUuid = vendor !== 'ascend' && cards.every((c) => c.uuid !== c.acceleratorId);
    const env = devicesEnv(
      { vendor, accelerators: cards.map((c) => ({ index: c.index, uuid: byUuid ? c.uuid : undefined })) },
      { identifyBy: byUuid ? 'uuid' : 'index' },
    );
    // The Ascend container runtime mounts the NPUs it finds here (physical ids).
    if (vendor === 'ascend') env.ASCEND_VISIBLE_DEVICES = env.ASCEND_RT_VISIBLE_DEVICES;
    return env;
  } catch (err) {
    if (err instanceof ProcessRuntimeError) throw new DevicePluginError('INVALID_ARGUMENT', err.message.replace(/^[A-Z_]+: /, ''));
    throw err;
  }
}

/** The response for one container's device ids of `resource`. */
export function allocateContainer(resource: PluginResource, ids: readonly string[], options: AllocateOptions = {}): ContainerAllocateResponse {
  const devices = lookupAll(resource, ids);
  const cards = uniqueCards(devices);
  const vendor = resource.vendor;
  const envs: Record<string, string> = {};
  const annotations: Record<string, string> = {
    [Annotations.devices(resource.name)]: ids.join(','),
    [Annotations.accelerators]: cards.map((c) => c.uuid).join(','),
  };
  const nodes = new Set<string>(CONTROL_NODES[vendor]);
  for (const card of cards) for (const n of cardNodes(card)) nodes.add(n);

  switch (resource.mode) {
    case 'whole':
      Object.assign(envs, visibilityEnv(cards));
      break;
    case 'shared':
    case 'slice': {
      if (cards.length > 1) {
        throw new DevicePluginError(
          'INVALID_ARGUMENT',
          `${resource.name} units of one container must be on one card, got units of ${cards.map((c) => c.uuid).join(' and ')}; request at most as many units as one card has (${resource.unitsPerCard})`,
        );
      }
      Object.assign(envs, visibilityEnv(cards));
      const units = devices.length;
      const perCard = resource.unitsPerCard ?? 1;
      if (resource.mode === 'shared') {
        envs.GPUFLEET_SHARED_TOKENS = String(units);
        annotations['gpufleet.io/shared-tokens'] = `${units}/${perCard}`;
      } else {
        const card = cards[0];
        const cores = Math.floor((100 * units) / perCard);
        envs.GPUFLEET_CORES_PERCENT = String(cores);
        annotations['gpufleet.io/slice'] = `${units}/${perCard}`;
        if (card.memoryMib !== undefined) {
          const mib = Math.floor((card.memoryMib * units) / perCard);
          envs.GPUFLEET_MEMORY_LIMIT_MIB = String(mib);
          if (vendor === 'nvidia') {
            // Enforced by an MPS daemon when the node runs one; advisory otherwise.
            envs.CUDA_MPS_PINNED_DEVICE_MEM_LIMIT = `0=${mib}M`;
            envs.CUDA_MPS_ACTIVE_THREAD_PERCENTAGE = String(cores);
          }
        }
      }
      break;
    }
    case 'mig': {
      const migs = devices.map((d) => d.mig).filter((m) => m !== undefined);
      Object.assign(envs, visibilityEnv(cards, migs.map((m) => m.uuid)));
      for (const d of devices) {
        const mig = d.mig;
        if (mig?.gpuInstanceId === undefined || mig.computeInstanceId === undefined) continue;
        nodes.add(`/dev/nvidia-caps/nvidia-cap${migCapabilityMinor(options.migMinors, d.card.index, mig.gpuInstanceId)}`);
        nodes.add(`/dev/nvidia-caps/nvidia-cap${migCapabilityMinor(options.migMinors, d.card.index, mig.gpuInstanceId, mig.computeInstanceId)}`);
      }
      annotations['gpufleet.io/mig-profile'] = resource.profile ?? '';
      break;
    }
  }
  return {
    envs,
    mounts: vendor === 'ascend' ? [...ASCEND_MOUNTS] : [],
    devices: [...nodes].map(rw),
    annotations,
    cdiDevices: [],
  };
}
