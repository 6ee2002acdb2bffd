import type { MigDevice } from '@gpufleet/contracts';
import { migProfileMemoryMib } from '../../catalog';
import { ToolOutputError, outputLines } from '../shared/tool-output';
import { saysNoDevicesFound } from './query-gpu';

/** One `GPU n:` line of `nvidia-smi -L` with the MIG devices listed under it. */
export interface NvidiaListedGpu {
  index: number;
  product: string;
  uuid: string;
  migDevices: MigDevice[];
}

const TOOL = 'nvidia-smi -L';
const GPU_LINE = /^GPU (\d+): (.+?) \(UUID: ([^)]+)\)$/;
const MIG_LINE = /^MIG (\S+)\s+Device\s+(\d+): \(UUID: ([^)]+)\)$/;
/** Drivers before R470 named MIG devices `MIG-GPU-<gpu uuid>/<gpu instance>/<compute instance>`. */
const LEGACY_MIG_UUID = /^MIG-GPU-[^/]+\/(\d+)\/(\d+)$/;

/**
 * Parses `nvidia-smi -L`:
 *
 *     GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-7fdaf0a5-...)
 *       MIG 1g.10gb     Device  0: (UUID: MIG-feb88891-...)
 *
 * Throws a ToolOutputError naming the line for anything else.
 */
export function parseNvidiaGpuList(text: string): NvidiaListedGpu[] {
  if (saysNoDevicesFound(text)) return [];
  const gpus: NvidiaListedGpu[] = [];
  outputLines(text).forEach((line, offset) => {
    const lineNumber = offset + 1;
    const trimmed = line.trim();
    if (trimmed === '') return;
    const gpu = GPU_LINE.exec(trimmed);
    if (gpu) {
      gpus.push({ index: Number(gpu[1]), product: gpu[2].trim(), uuid: gpu[3].trim(), migDevices: [] });
      return;
    }
    const mig = MIG_LINE.exec(trimmed);
    if (mig) {
      const parent = gpus[gpus.length - 1];
      if (parent === undefined) {
        throw new ToolOutputError(TOOL, `MIG device listed before any GPU: "${trimmed}"`, lineNumber);
      }
      parent.migDevices.push(migDevice(mig[1], Number(mig[2]), mig[3].trim()));
      return;
    }
    const expected = 'expected a "GPU n: ..." or "MIG ... Device n: ..." line';
    throw new ToolOutputError(TOOL, `${expected}, got "${trimmed}"`, lineNumber);
  });
  return gpus;
}

function migDevice(profile: string, index: number, uuid: string): MigDevice {
  const device: MigDevice = { uuid, profile, index };
  const legacy = LEGACY_MIG_UUID.exec(uuid);
  if (legacy) {
    device.gpuInstanceId = Number(legacy[1]);
    device.computeInstanceId = Number(legacy[2]);
  }
  const memoryMib = migProfileMemoryMib(profile);
  if (memoryMib !== undefined) device.memoryMib = memoryMib;
  return device;
}
