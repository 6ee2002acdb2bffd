import { CapacityView, InstanceType, Node, NodePhase, Pool } from '@gpufleet/contracts';
import { Column, age, mib } from './format';

const phase = (p: NodePhase | undefined) =>
  p === NodePhase.NODE_PHASE_READY ? 'Ready' : p === NodePhase.NODE_PHASE_NOT_READY ? 'NotReady' : 'Unknown';

function acceleratorSummary(n: Node): string {
  const accs = n.inventory?.accelerators ?? [];
  if (accs.length === 0) return '-';
  const counts = new Map<string, number>();
  for (const a of accs) counts.set(a.product, (counts.get(a.product) ?? 0) + 1);
  return [...counts].map(([p, c]) => `${c}x ${p}`).join(', ');
}

/**
 * Whether the node's runtime sandboxes pods: "yes"; "no (shared)" when it runs them unconfined
 * and the admin allowed namespaces to share it; "no (1 namespace)" when the scheduler places one
 * namespace's pods at a time there; "-" before its runtime reported (or on Kubernetes).
 */
export function sandboxSummary(n: Node): string {
  if (!n.runtime) return '-';
  if (n.runtime.sandboxed) return 'yes';
  return n.runtime.sharingAllowed ? 'no (shared)' : 'no (1 namespace)';
}

/** remaining/capacity, e.g. "12/16". */
const rc = (v: CapacityView | undefined) => (v ? `${v.remaining}/${v.capacity}` : '-');

export const nodeColumns: Column<Node>[] = [
  { header: 'NAME', value: (n) => n.name },
  { header: 'STATUS', value: (n) => phase(n.status?.phase) },
  { header: 'POOL', value: (n) => n.pool || '-' },
  { header: 'ACCELERATORS', value: acceleratorSummary },
  { header: 'MIG', value: (n) => String((n.inventory?.accelerators ?? []).filter((a) => a.migEnabled).length), wideOnly: true },
  { header: 'VCPU', value: (n) => String(n.inventory?.cpu?.logicalCpus ?? '-') },
  { header: 'MEMORY', value: (n) => mib(n.inventory?.memory?.totalMib) },
  { header: 'RDMA', value: (n) => String((n.inventory?.nics ?? []).filter((x) => x.state === 'ACTIVE').length), wideOnly: true },
  { header: 'ZONE', value: (n) => n.inventory?.topology?.zone || '-', wideOnly: true },
  { header: 'RACK', value: (n) => n.inventory?.topology?.rack || '-', wideOnly: true },
  { header: 'NVLINK-DOMAIN', value: (n) => n.inventory?.topology?.nvlinkDomain || '-', wideOnly: true },
  { header: 'DRIVER', value: (n) => n.inventory?.driverVersion ?? '-', wideOnly: true },
  { header: 'SANDBOX', value: sandboxSummary, wideOnly: true },
  { header: 'LAST-HEARTBEAT', value: (n) => age(n.status?.lastHeartbeat) },
];

export const poolColumns: Column<Pool>[] = [
  { header: 'NAME', value: (p) => p.name },
  { header: 'NODES', value: (p) => `${p.readyNodes}/${p.nodes.length}` },
  { header: 'ACCELERATOR', value: (p) => p.identity?.acceleratorProduct || '(cpu only)' },
  { header: 'ACCELERATORS', value: (p) => String(p.accelerators) },
  { header: 'MIG', value: (p) => String(p.migAccelerators) },
  { header: 'CPU', value: (p) => p.identity?.cpu ?? '-', wideOnly: true },
  { header: 'OS', value: (p) => p.identity?.os ?? '-', wideOnly: true },
  { header: 'ARCH', value: (p) => p.identity?.architecture ?? '-', wideOnly: true },
];

function unit(t: InstanceType): string {
  const u = t.unit;
  if (!u) return '-';
  const acc = u.accelerators ? `${u.accelerators}x${mib(u.acceleratorMemoryMib)} ` : '';
  return `${acc}${u.vcpu}c ${mib(u.memoryMib)}`;
}

function partitions(t: InstanceType): string {
  // Profiles the product supports but no GPU of the pool has MIG enabled for are noise here.
  const p = (t.capacity?.partitioned ?? []).filter((x) => (x.view?.capacity ?? 0) > 0);
  return p.length ? p.map((x) => `${x.profile}:${rc(x.view)}`).join(',') : '-';
}

export const instanceTypeColumns: Column<InstanceType>[] = [
  { header: 'NAME', value: (t) => t.name },
  { header: 'POOL', value: (t) => t.pool, wideOnly: true },
  { header: 'UNIT', value: unit },
  { header: 'CREDITS', value: (t) => String(t.creditPrice) },
  { header: 'WHOLE', value: (t) => rc(t.capacity?.whole) },
  { header: 'MAX-PER-POD', value: (t) => String(t.capacity?.whole?.onceMaxRequest ?? '-'), wideOnly: true },
  { header: 'SHARED', value: (t) => rc(t.capacity?.shared) },
  { header: 'SLICED-MEM', value: (t) => (t.capacity?.sliced?.memoryMib ? `${mib(t.capacity.sliced.memoryMib.remaining)}/${mib(t.capacity.sliced.memoryMib.capacity)}` : '-') },
  { header: 'SLICED-CORES', value: (t) => rc(t.capacity?.sliced?.coresPercent), wideOnly: true },
  { header: 'PARTITIONS', value: partitions },
  { header: 'CPU', value: (t) => rc(t.capacity?.cpu), wideOnly: true },
  { header: 'MEMORY', value: (t) => (t.capacity?.memoryMib ? `${mib(t.capacity.memoryMib.remaining)}/${mib(t.capacity.memoryMib.capacity)}` : '-'), wideOnly: true },
  { header: 'READY-NODES', value: (t) => String(t.readyNodes), wideOnly: true },
];
