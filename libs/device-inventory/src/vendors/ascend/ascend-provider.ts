import { AcceleratorVendor, type Accelerator } from '@gpufleet/contracts';
import { ascendFamilyOf } from '../../catalog';
import type { CommandRunner, DetectionResult, DeviceProvider } from '../../provider';
import { runVendorTool, toolStarts } from '../shared/command';
import { setIfPresent } from '../shared/tool-output';
import { parseNpuSmiInfo, type AscendChipRecord } from './npu-smi-info';

export interface AscendProviderOptions {
  /** Default "npu-smi" from PATH. */
  npuSmi?: string;
}

const PROVIDER = 'ascend';

/** The accelerator id the Ascend provider gives device `index`. */
export function ascendAcceleratorId(index: number): string {
  return `ascend-${index}`;
}

/**
 * Huawei Ascend NPUs from `npu-smi info`. That table prints no UUID, so `uuid` stays empty, and no
 * HCCS topology: links would need `npu-smi info -t topo`, which this provider does not read yet.
 */
export class AscendProvider implements DeviceProvider {
  readonly name = PROVIDER;
  private readonly npuSmi: string;

  constructor(
    private readonly run: CommandRunner,
    options: AscendProviderOptions = {},
  ) {
    this.npuSmi = options.npuSmi ?? 'npu-smi';
  }

  available(): Promise<boolean> {
    return toolStarts(this.run, this.npuSmi, ['info']);
  }

  async detect(): Promise<DetectionResult> {
    const info = parseNpuSmiInfo(await runVendorTool(this.run, PROVIDER, this.npuSmi, ['info']));
    const result: DetectionResult = { accelerators: info.chips.map(accelerator) };
    setIfPresent(result, 'driverVersion', info.version);
    return result;
  }
}

/** "910B3" -> "Ascend 910B3", "Ascend910" -> "Ascend 910". */
export function ascendProductName(name: string): string {
  return `Ascend ${name.replace(/^Ascend\s*/i, '')}`;
}

/**
 * The SoC version CANN compiles for (`atc --soc_version=Ascend910B3`), when npu-smi names the exact
 * chip ("910B3", "310P3"). The generic "Ascend910" of Atlas A3 boards does not name it.
 */
export function ascendSocVersion(name: string): string | undefined {
  return /^\d{3}[A-Z]\d*$/.test(name) ? `Ascend${name}` : undefined;
}

function accelerator(chip: AscendChipRecord): Accelerator {
  const result: Accelerator = {
    id: ascendAcceleratorId(chip.index),
    vendor: AcceleratorVendor.ACCELERATOR_VENDOR_ASCEND,
    index: chip.index,
    uuid: '',
    product: ascendProductName(chip.name),
    family: ascendFamilyOf(chip.name),
    migCapable: false,
    migEnabled: false,
    migDevices: [],
  };
  setIfPresent(result, 'memoryMib', chip.memoryMib);
  setIfPresent(result, 'computeCapability', ascendSocVersion(chip.name));
  setIfPresent(result, 'pciBusId', chip.pciBusId);
  setIfPresent(result, 'memoryUsedMib', chip.memoryUsedMib);
  setIfPresent(result, 'utilizationPercent', chip.utilizationPercent);
  setIfPresent(result, 'temperatureCelsius', chip.temperatureCelsius);
  return result;
}
