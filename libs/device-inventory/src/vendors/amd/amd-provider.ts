import { AcceleratorVendor, type Accelerator, type DeviceLink } from '@gpufleet/contracts';
import { amdFamilyOf } from '../../catalog';
import type { CommandRunner, DetectionResult, DeviceProvider } from '../../provider';
import { failureText, isToolMissing, runVendorTool, toolStarts } from '../shared/command';
import { setIfPresent } from '../shared/tool-output';
import { parseAmdSmiList, parseAmdSmiStatic } from './amd-smi';
import type { AmdGpuRecord } from './amd-gpu-record';
import { ROCM_SMI_INVENTORY_ARGS, ROCM_SMI_TOPOLOGY_ARGS, parseRocmSmiCards, parseRocmSmiLinkTypes } from './rocm-smi';

export interface AmdProviderOptions {
  /** Default "amd-smi" from PATH. */
  amdSmi?: string;
  /** Default "rocm-smi" from PATH. */
  rocmSmi?: string;
}

const PROVIDER = 'amd';

/** The accelerator id the AMD provider gives GPU `index`. */
export function amdAcceleratorId(index: number): string {
  return `amd-${index}`;
}

/**
 * AMD GPUs. The inventory comes from `amd-smi static --json` plus `amd-smi list --json` (UUIDs);
 * when amd-smi is missing or fails, from `rocm-smi --showproductname --showmeminfo vram --showbus
 * --showuniqueid --showserial --showdriverversion --json`. Links come from `rocm-smi --showtopotype
 * --json` where rocm-smi is installed; a node with amd-smi alone reports none.
 */
export class AmdProvider implements DeviceProvider {
  readonly name = PROVIDER;
  private readonly amdSmi: string;
  private readonly rocmSmi: string;

  constructor(
    private readonly run: CommandRunner,
    options: AmdProviderOptions = {},
  ) {
    this.amdSmi = options.amdSmi ?? 'amd-smi';
    this.rocmSmi = options.rocmSmi ?? 'rocm-smi';
  }

  async available(): Promise<boolean> {
    return (await toolStarts(this.run, this.amdSmi, ['version'])) || toolStarts(this.run, this.rocmSmi, ['--version']);
  }

  async detect(): Promise<DetectionResult> {
    const records = await this.inventory();
    if (records.length === 0) return { accelerators: [] };
    const accelerators = records.map(accelerator);
    const result: DetectionResult = { accelerators };
    const links = await this.links(accelerators);
    if (links !== undefined) result.links = links;
    setIfPresent(result, 'driverVersion', records.find((record) => record.driverVersion)?.driverVersion);
    return result;
  }

  private async inventory(): Promise<AmdGpuRecord[]> {
    let amdSmiFailure: unknown;
    try {
      return await this.fromAmdSmi();
    } catch (error) {
      amdSmiFailure = error;
    }
    try {
      return parseRocmSmiCards(await this.tool(this.rocmSmi, ROCM_SMI_INVENTORY_ARGS));
    } catch (rocmSmiFailure) {
      const amdSmiMissing = isToolMissing(causeOf(amdSmiFailure));
      const rocmSmiMissing = isToolMissing(causeOf(rocmSmiFailure));
      if (amdSmiMissing && rocmSmiMissing) {
        throw new Error(`${PROVIDER}: neither ${this.amdSmi} nor ${this.rocmSmi} is installed`, {
          cause: rocmSmiFailure,
        });
      }
      if (rocmSmiMissing) throw amdSmiFailure;
      if (amdSmiMissing) throw rocmSmiFailure;
      const both = `${failureText(amdSmiFailure)}; the rocm-smi fallback failed too: ${failureText(rocmSmiFailure)}`;
      throw new Error(both, { cause: amdSmiFailure });
    }
  }

  private async fromAmdSmi(): Promise<AmdGpuRecord[]> {
    const records = parseAmdSmiStatic(await this.tool(this.amdSmi, ['static', '--json']));
    if (records.length === 0) return records;
    const list = parseAmdSmiList(await this.tool(this.amdSmi, ['list', '--json']));
    const listed = new Map(list.map((gpu) => [gpu.index, gpu]));
    return records.map((record) => {
      const identity = listed.get(record.index);
      const merged: AmdGpuRecord = { ...record };
      setIfPresent(merged, 'uuid', record.uuid ?? identity?.uuid);
      setIfPresent(merged, 'pciBusId', record.pciBusId ?? identity?.pciBusId);
      return merged;
    });
  }

  /** Undefined when rocm-smi is not installed: amd-smi's own topology output is not read yet. */
  private async links(accelerators: Accelerator[]): Promise<DeviceLink[] | undefined> {
    let text: string;
    try {
      text = await this.tool(this.rocmSmi, ROCM_SMI_TOPOLOGY_ARGS);
    } catch (error) {
      if (isToolMissing(causeOf(error))) return undefined;
      throw error;
    }
    const known = new Set(accelerators.map((gpu) => gpu.id));
    return parseRocmSmiLinkTypes(text, amdAcceleratorId).filter((link) => known.has(link.a) && known.has(link.b));
  }

  private tool(command: string, args: readonly string[]): Promise<string> {
    return runVendorTool(this.run, PROVIDER, command, args);
  }
}

/** runVendorTool wraps the runner's error; tool-missing checks look at what the runner threw. */
function causeOf(error: unknown): unknown {
  return error instanceof Error && error.cause !== undefined ? error.cause : error;
}

function accelerator(record: AmdGpuRecord): Accelerator {
  const result: Accelerator = {
    id: amdAcceleratorId(record.index),
    vendor: AcceleratorVendor.ACCELERATOR_VENDOR_AMD,
    index: record.index,
    uuid: record.uuid ?? '',
    product: record.product,
    family: amdFamilyOf(record.product, record.gfxTarget),
    migCapable: false,
    migEnabled: false,
    migDevices: [],
  };
  setIfPresent(result, 'memoryMib', record.memoryMib);
  setIfPresent(result, 'computeCapability', record.gfxTarget);
  setIfPresent(result, 'pciBusId', record.pciBusId);
  setIfPresent(result, 'numaNode', record.numaNode);
  setIfPresent(result, 'cpuAffinity', record.cpuAffinity);
  setIfPresent(result, 'memoryUsedMib', record.memoryUsedMib);
  setIfPresent(result, 'powerLimitWatts', record.powerLimitWatts);
  setIfPresent(result, 'serial', record.serial);
  return result;
}
