import { AcceleratorVendor, type Accelerator, type DeviceLink } from '@gpufleet/contracts';
import type { CommandRunner, DetectionResult, DeviceProvider } from '../../provider';
import { failureText, runVendorTool, toolFailure, toolStarts } from '../shared/command';
import { setIfPresent } from '../shared/tool-output';
import { resolveNvidiaArchitecture } from './architecture';
import { NVIDIA_VERSION_QUERY, parseNvidiaDriverVersions } from './driver-versions';
import { parseNvidiaGpuList } from './gpu-list';
import {
  NVIDIA_QUERY_GPU_FIELDS,
  parseNvidiaQueryGpu,
  rejectedQueryField,
  saysNoDevicesFound,
  type NvidiaGpuRecord,
} from './query-gpu';
import { nvidiaAcceleratorId, parseNvidiaTopology, type NvidiaGpuPlacement } from './topology-matrix';

export interface NvidiaProviderOptions {
  /** The nvidia-smi executable; default "nvidia-smi" from PATH. */
  nvidiaSmi?: string;
}

const PROVIDER = 'nvidia';

/**
 * NVIDIA GPUs from nvidia-smi. One pass runs:
 * - `nvidia-smi --query-gpu=<fields> --format=csv` for the GPUs (a field an older driver rejects is
 *   dropped and the query asked again),
 * - `nvidia-smi -L` for MIG devices, only when a GPU has MIG enabled,
 * - `nvidia-smi topo -m` for links between GPUs and to NICs, CPU and NUMA affinity,
 * - `nvidia-smi -q -d COMPUTE` for the driver and CUDA versions.
 */
export class NvidiaProvider implements DeviceProvider {
  readonly name = PROVIDER;
  private readonly nvidiaSmi: string;

  constructor(
    private readonly run: CommandRunner,
    options: NvidiaProviderOptions = {},
  ) {
    this.nvidiaSmi = options.nvidiaSmi ?? 'nvidia-smi';
  }

  available(): Promise<boolean> {
    return toolStarts(this.run, this.nvidiaSmi, ['-L']);
  }

  async detect(): Promise<DetectionResult> {
    const queried = await this.queryGpus();
    if (queried === undefined) return { accelerators: [] };
    const records = parseNvidiaQueryGpu(queried);
    if (records.length === 0) return { accelerators: [] };

    const migDevicesByUuid = await this.migDevices(records);
    const topology = parseNvidiaTopology(await this.tool(['topo', '-m']));
    const versions = parseNvidiaDriverVersions(await this.tool(NVIDIA_VERSION_QUERY));

    const placements = new Map(topology.gpus.map((gpu) => [gpu.index, gpu]));
    const accelerators = records.map((record) =>
      accelerator(record, placements.get(record.index), migDevicesByUuid.get(record.uuid)),
    );
    const result: DetectionResult = {
      accelerators,
      links: linksOwnedBy(accelerators, topology.links),
      driverVersion: versions.driverVersion,
    };
    setIfPresent(result, 'runtimeVersion', versions.cudaVersion);
    return result;
  }

  /**
   * Runs the GPU query, dropping any field this driver does not know and asking again.
   * Undefined when nvidia-smi reports "No devices were found" (it exits non-zero for that).
   */
  private async queryGpus(): Promise<string | undefined> {
    const fields: string[] = [...NVIDIA_QUERY_GPU_FIELDS];
    for (;;) {
      const args = [`--query-gpu=${fields.join(',')}`, '--format=csv'];
      let output: string;
      try {
        output = await this.run(this.nvidiaSmi, args);
      } catch (error) {
        if (saysNoDevicesFound(failureText(error))) return undefined;
        if (dropRejectedField(fields, failureText(error))) continue;
        throw toolFailure(PROVIDER, this.nvidiaSmi, args, error);
      }
      // A runner that resolves despite a non-zero exit hands the message over as output.
      if (dropRejectedField(fields, output)) continue;
      return saysNoDevicesFound(output) ? undefined : output;
    }
  }

  private async migDevices(records: NvidiaGpuRecord[]): Promise<Map<string, Accelerator['migDevices']>> {
    const byUuid = new Map<string, Accelerator['migDevices']>();
    if (!records.some((record) => record.migMode === 'enabled')) return byUuid;
    for (const gpu of parseNvidiaGpuList(await this.tool(['-L']))) byUuid.set(gpu.uuid, gpu.migDevices);
    return byUuid;
  }

  private tool(args: readonly string[]): Promise<string> {
    return runVendorTool(this.run, PROVIDER, this.nvidiaSmi, args);
  }
}

/** Removes the field nvidia-smi named as unknown; false when the message names none it can drop. */
function dropRejectedField(fields: string[], message: string): boolean {
  const rejected = rejectedQueryField(message);
  if (rejected === undefined || rejected === 'index' || !fields.includes(rejected)) return false;
  fields.splice(fields.indexOf(rejected), 1);
  return true;
}

function accelerator(
  record: NvidiaGpuRecord,
  placement: NvidiaGpuPlacement | undefined,
  migDevices: Accelerator['migDevices'] | undefined,
): Accelerator {
  const architecture = resolveNvidiaArchitecture(record.name, record.computeCapability);
  const result: Accelerator = {
    id: nvidiaAcceleratorId(record.index),
    vendor: AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA,
    index: record.index,
    uuid: record.uuid,
    product: record.name,
    family: architecture.family,
    migCapable: record.migMode !== undefined,
    migEnabled: record.migMode === 'enabled',
    migDevices: record.migMode === 'enabled' ? (migDevices ?? []) : [],
  };
  setIfPresent(result, 'memoryMib', record.memoryTotalMib);
  setIfPresent(result, 'computeCapability', architecture.computeCapability);
  setIfPresent(result, 'pciBusId', record.pciBusId);
  setIfPresent(result, 'numaNode', placement?.numaNode);
  setIfPresent(result, 'cpuAffinity', placement?.cpuAffinity);
  setIfPresent(result, 'memoryUsedMib', record.memoryUsedMib);
  setIfPresent(result, 'utilizationPercent', record.utilizationPercent);
  setIfPresent(result, 'temperatureCelsius', record.temperatureCelsius);
  setIfPresent(result, 'powerLimitWatts', record.powerLimitWatts);
  setIfPresent(result, 'serial', record.serial);
  return result;
}

/**
 * The links this provider reports: those with a GPU it found at one end. NIC–NIC cells of the
 * matrix are left to the rdma provider, and GPUs the query did not return are dropped.
 */
function linksOwnedBy(accelerators: Accelerator[], links: DeviceLink[]): DeviceLink[] {
  const ids = new Set(accelerators.map((gpu) => gpu.id));
  const isGpu = (end: string): boolean => /^nvidia-\d+$/.test(end);
  const endIsKnown = (end: string): boolean => !isGpu(end) || ids.has(end);
  return links.filter((link) => (isGpu(link.a) || isGpu(link.b)) && endIsKnown(link.a) && endIsKnown(link.b));
}
