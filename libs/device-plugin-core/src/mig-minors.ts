/**
 * Device-node minors of MIG capabilities: a container using a MIG partition needs
 * /dev/nvidia-caps/nvidia-cap<minor> of its GPU instance and of its compute instance. The driver
 * lists them in /proc/driver/nvidia-caps/mig-minors ("gpu0/gi1/access 12",
 * "gpu0/gi1/ci0/access 13").
 */
import { DevicePluginError } from './errors';

export type MigMinors = ReadonlyMap<string, number>;

/** Parses the mig-minors file; a line that is not "<path> <minor>" is refused, naming it. */
export function parseMigMinors(text: string): MigMinors {
  const minors = new Map<string, number>();
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '') return;
    const m = /^(\S+)\s+(\d+)$/.exec(line);
    if (!m) throw new DevicePluginError('INVALID_ARGUMENT', `mig-minors line ${i + 1} is not "<capability> <minor>": ${JSON.stringify(raw)}`);
    minors.set(m[1], Number(m[2]));
  });
  return minors;
}

/** GPU instances per GPU and compute instances per GPU instance the driver reserves minors for. */
const GI_PER_GPU = 15;
const CI_PER_GI = 8;

/**
 * The driver's default layout of mig-minors (config 1, monitor 2, then per GPU 15 GPU instances
 * of one access minor and eight compute-instance minors each), used when the file is not readable.
 */
export function defaultMigMinor(gpu: number, gi: number, ci?: number): number {
  const giMinor = 3 + gpu * GI_PER_GPU * (1 + CI_PER_GI) + gi * (1 + CI_PER_GI);
  return ci === undefined ? giMinor : giMinor + 1 + ci;
}

export function migCapabilityMinor(minors: MigMinors | undefined, gpu: number, gi: number, ci?: number): number {
  const key = ci === undefined ? `gpu${gpu}/gi${gi}/access` : `gpu${gpu}/gi${gi}/ci${ci}/access`;
  return minors?.get(key) ?? defaultMigMinor(gpu, gi, ci);
}
