import { ClusterQueue, LocalQueue, PodResources, Workload, WorkloadPhase } from '@gpufleet/contracts';
import { Column, age } from './format';

export function phaseName(p: WorkloadPhase | undefined): string {
  switch (p) {
    case WorkloadPhase.WORKLOAD_PHASE_PENDING: return 'Pending';
    case WorkloadPhase.WORKLOAD_PHASE_QUOTA_RESERVED: return 'QuotaReserved';
    case WorkloadPhase.WORKLOAD_PHASE_ADMITTED: return 'Admitted';
    case WorkloadPhase.WORKLOAD_PHASE_FINISHED: return 'Finished';
    default: return 'Unknown';
  }
}

/** One pod's accelerator request, short: "8x", "3 tokens", "20Gi/30%", "mig 3g.40gb", "cpu only". */
export function podRequest(r: PodResources | undefined): string {
  const a = r?.accelerator;
  if (a?.whole) return `${a.whole}x`;
  if (a?.sharedTokens) return `${a.sharedTokens} tokens`;
  if (a?.slice) return `${a.slice.memoryMib !== undefined ? `${a.slice.memoryMib}Mi` : `${a.slice.memoryPercent}%mem`}/${a.slice.coresPercent}%`;
  if (a?.partitionProfile) return `mig ${a.partitionProfile}`;
  return 'cpu only';
}

function shape(w: Workload): string {
  return (w.spec?.podSets ?? []).map((p) => `${p.count}x${p.size > 1 ? `${p.size}pods` : ''}(${podRequest(p.resources)})`).join('+');
}

function nodes(w: Workload): string {
  const set = [...new Set((w.status?.placements ?? []).map((p) => p.node))];
  if (set.length === 0) return '-';
  return set.length > 3 ? `${set.slice(0, 3).join(',')},+${set.length - 3}` : set.join(',');
}

function reason(w: Workload): string {
  const failed = w.status?.pending?.gates.find((g) => !g.passed);
  return failed ? `${failed.gate}: ${failed.reason}` : '';
}

export const workloadColumns: Column<Workload>[] = [
  { header: 'NAMESPACE', value: (w) => w.spec?.namespace ?? '' },
  { header: 'NAME', value: (w) => w.spec?.name ?? '' },
  { header: 'QUEUE', value: (w) => w.spec?.localQueue ?? '' },
  { header: 'PHASE', value: (w) => phaseName(w.status?.phase) },
  { header: 'PRIORITY', value: (w) => String(w.spec?.priority ?? 0), wideOnly: true },
  { header: 'REQUEST', value: shape },
  { header: 'CREDITS', value: (w) => String(w.status?.credits ?? 0), wideOnly: true },
  { header: 'NODES', value: nodes },
  { header: 'REASON', value: reason },
  { header: 'AGE', value: (w) => age(w.status?.submittedAt) },
];

/** "gpufleet" for the default queues the scheduler keeps, "-" for an administrator's own. */
function managedBy(q: { managedBy?: string | undefined }): string {
  return q.managedBy || '-';
}

export const clusterQueueColumns: Column<ClusterQueue>[] = [
  { header: 'NAME', value: (q) => q.name },
  { header: 'POOL', value: (q) => q.pool },
  { header: 'COHORT', value: (q) => q.cohort || '-' },
  { header: 'STRATEGY', value: (q) => (q.queueingStrategy.endsWith('STRICT_FIFO') ? 'StrictFIFO' : 'BestEffortFIFO') },
  { header: 'QUOTA', value: (q) => String(q.nominalQuota) },
  { header: 'ADMITTED-CREDITS', value: (q) => String(q.usage?.admittedCredits ?? 0) },
  { header: 'BORROWED', value: (q) => String(q.usage?.borrowedCredits ?? 0), wideOnly: true },
  { header: 'ADMITTED', value: (q) => String(q.usage?.admittedWorkloads ?? 0) },
  { header: 'PENDING', value: (q) => String(q.usage?.pendingWorkloads ?? 0) },
  { header: 'MANAGED-BY', value: managedBy, wideOnly: true },
];

export const localQueueColumns: Column<LocalQueue>[] = [
  { header: 'NAMESPACE', value: (q) => q.namespace },
  { header: 'NAME', value: (q) => q.name },
  { header: 'CLUSTERQUEUE', value: (q) => q.clusterQueue },
  { header: 'MANAGED-BY', value: managedBy, wideOnly: true },
];
