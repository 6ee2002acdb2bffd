import { AcceleratorVendor, NodeInventory } from '@gpufleet/contracts';

const NODE_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const MAX_MEMORY_MIB = 64 * 1024 * 1024; // 64 TiB: anything larger is a unit mistake

/**
 * Problems with a node inventory received from the wire, each as `field: expected …, got …`.
 * Receivers drop an inventory with problems instead of folding nonsense into capacity.
 */
export function validateInventory(inv: NodeInventory, expectedCluster?: string): string[] {
  const problems: string[] = [];
  const bad = (field: string, expected: string, got: unknown) => problems.push(`${field}: expected ${expected}, got ${JSON.stringify(got)}`);

  if (!NODE_NAME.test(inv.nodeName)) bad('nodeName', 'a DNS-1123 name', inv.nodeName);
  if (expectedCluster !== undefined && inv.cluster !== expectedCluster) bad('cluster', `"${expectedCluster}"`, inv.cluster);
  if (inv.generation < 1) bad('generation', 'a positive integer', inv.generation);
  if (inv.cpu && inv.cpu.logicalCpus < 0) bad('cpu.logicalCpus', 'a non-negative integer', inv.cpu.logicalCpus);
  if (inv.memory && (inv.memory.totalMib < 0 || inv.memory.totalMib > MAX_MEMORY_MIB)) {
    bad('memory.totalMib', `MiB between 0 and ${MAX_MEMORY_MIB}`, inv.memory.totalMib);
  }

  const ids = new Set<string>();
  inv.accelerators.forEach((a, i) => {
    const at = `accelerators[${i}]`;
    if (!a.id) bad(`${at}.id`, 'a non-empty id', a.id);
    else if (ids.has(a.id)) bad(`${at}.id`, 'an id unique within the node', a.id);
    ids.add(a.id);
    if (a.vendor === AcceleratorVendor.ACCELERATOR_VENDOR_UNSPECIFIED) bad(`${at}.vendor`, 'a known vendor', a.vendor);
    if (!a.product) bad(`${at}.product`, 'a product name', a.product);
    if (a.memoryMib !== undefined && (a.memoryMib <= 0 || a.memoryMib > MAX_MEMORY_MIB)) bad(`${at}.memoryMib`, 'a positive MiB value', a.memoryMib);
    if (a.migDevices.length > 0 && !a.migEnabled) bad(`${at}.migDevices`, 'none while migEnabled is false', a.migDevices.length);
    a.migDevices.forEach((m, j) => {
      if (!m.profile) bad(`${at}.migDevices[${j}].profile`, 'a MIG profile such as "1g.10gb"', m.profile);
    });
  });

  const nics = new Set<string>();
  inv.nics.forEach((n, i) => {
    if (!n.name) bad(`nics[${i}].name`, 'a device name such as "mlx5_0"', n.name);
    nics.add(n.name);
  });
  inv.links.forEach((l, i) => {
    for (const end of ['a', 'b'] as const) {
      if (!ids.has(l[end]) && !nics.has(l[end])) bad(`links[${i}].${end}`, 'an accelerator id or NIC name of this node', l[end]);
    }
  });
  return problems;
}
