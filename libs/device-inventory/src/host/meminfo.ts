import type { Memory } from '@gpufleet/contracts';

/** /proc/meminfo values are kB (KiB); the inventory speaks MiB. */
export function parseMeminfo(text: string): Memory {
  const kib = (key: string): number | undefined => {
    const match = new RegExp(`^${key}:\\s+(\\d+)\\s*kB`, 'm').exec(text);
    return match ? Number(match[1]) : undefined;
  };
  const total = kib('MemTotal');
  if (total === undefined) throw new Error('/proc/meminfo has no MemTotal line');
  const available = kib('MemAvailable');
  return {
    totalMib: Math.floor(total / 1024),
    ...(available !== undefined ? { availableMib: Math.floor(available / 1024) } : {}),
  };
}
