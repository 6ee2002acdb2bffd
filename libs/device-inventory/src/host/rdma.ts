import * as path from 'node:path';
import type { Nic } from '@gpufleet/contracts';
import { hostPath, listOptionalDir, readOptionalLink, readOptionalText } from './sysfs';

const PCI_ADDRESS = /^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$/i;

/** "4: ACTIVE" → "ACTIVE" (the number is the IB port state enum; the word is what people read). */
export function parsePortState(text: string): string {
  const value = text.trim();
  const colon = value.indexOf(':');
  return (colon >= 0 ? value.slice(colon + 1) : value).trim().toUpperCase();
}

/** "400 Gb/sec (4X NDR)" → 400; "2.5 Gb/sec (1X SDR)" → 3 (Gb/s, whole numbers). */
export function parsePortRate(text: string): number | undefined {
  const match = /^\s*([\d.]+)\s*Gb\/sec/i.exec(text);
  if (!match) return undefined;
  const rate = Number(match[1]);
  return Number.isFinite(rate) ? Math.round(rate) : undefined;
}

/** sysfs numa_node: -1 means the platform did not say, which the inventory leaves absent. */
export function parseNumaNode(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number.parseInt(text.trim(), 10);
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}

/**
 * PCI address of the device behind an IB device. `device` is normally a symlink whose last
 * component is the address; a flattened copy of sysfs keeps it in device/uevent instead.
 */
async function pciAddress(deviceDir: string): Promise<string | undefined> {
  const link = await readOptionalLink(deviceDir);
  if (link !== undefined) {
    const base = path.basename(link);
    if (PCI_ADDRESS.test(base)) return base.toLowerCase();
  }
  const uevent = await readOptionalText(path.join(deviceDir, 'uevent'));
  const slot = uevent && /^PCI_SLOT_NAME=(.+)$/m.exec(uevent)?.[1]?.trim();
  return slot && PCI_ADDRESS.test(slot) ? slot.toLowerCase() : undefined;
}

/**
 * Network interface per port. A single netdev belongs to the device's only port; with several
 * (dual-port cards), each netdev's dev_port says which IB port (0-based) it is.
 */
async function netdevsByPort(deviceDir: string, ports: number[]): Promise<Map<number, string>> {
  const netDir = path.join(deviceDir, 'net');
  const names = await listOptionalDir(netDir);
  const byPort = new Map<number, string>();
  if (names.length === 1 && ports.length === 1) {
    byPort.set(ports[0], names[0]);
    return byPort;
  }
  for (const name of names) {
    const devPort = Number.parseInt((await readOptionalText(path.join(netDir, name, 'dev_port'))) ?? '', 10);
    if (Number.isInteger(devPort) && !byPort.has(devPort + 1)) byPort.set(devPort + 1, name);
  }
  return byPort;
}

/** Reads one Nic per port of every device in /sys/class/infiniband; [] when the class is absent. */
export async function readRdmaNics(root = '/'): Promise<Nic[]> {
  const classDir = hostPath(root, '/sys/class/infiniband');
  const nics: Nic[] = [];
  for (const device of await listOptionalDir(classDir)) {
    const deviceRoot = path.join(classDir, device);
    const deviceDir = path.join(deviceRoot, 'device');
    const ports = (await listOptionalDir(path.join(deviceRoot, 'ports')))
      .map((p) => Number.parseInt(p, 10))
      .filter((p) => Number.isInteger(p));
    const [numaNode, pciBusId, netdevs] = await Promise.all([
      readOptionalText(path.join(deviceDir, 'numa_node')).then(parseNumaNode),
      pciAddress(deviceDir),
      netdevsByPort(deviceDir, ports),
    ]);
    for (const port of ports) {
      const portDir = path.join(deviceRoot, 'ports', String(port));
      const [state, rate, linkLayer] = await Promise.all([
        readOptionalText(path.join(portDir, 'state')),
        readOptionalText(path.join(portDir, 'rate')),
        readOptionalText(path.join(portDir, 'link_layer')),
      ]);
      if (state === undefined) {
        throw new Error(`${portDir}/state is missing: cannot tell whether ${device} port ${port} is up`);
      }
      const rateGbps = rate !== undefined ? parsePortRate(rate) : undefined;
      const netdev = netdevs.get(port);
      nics.push({
        name: device,
        port,
        // Older kernels omit link_layer for pure IB HCAs.
        linkLayer: linkLayer?.trim() || 'InfiniBand',
        state: parsePortState(state),
        ...(rateGbps !== undefined ? { rateGbps } : {}),
        ...(numaNode !== undefined ? { numaNode } : {}),
        ...(pciBusId !== undefined ? { pciBusId } : {}),
        ...(netdev !== undefined ? { netdev } : {}),
      });
    }
  }
  return nics;
}
