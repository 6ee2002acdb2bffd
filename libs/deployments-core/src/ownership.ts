import { OwnerLabels, type WorkloadSpec } from '@gpufleet/contracts';

/** The kinds that own workloads: each has its own controller. */
export type OwnerKind = 'deployment' | 'instance';

/** Which record owns a workload: its kind and name (in the workload's namespace). */
export interface WorkloadOwner {
  kind: OwnerKind;
  name: string;
}

/**
 * The owner a workload's labels name. A deployment label wins over an instance label, so a
 * workload is owned by exactly one controller; a workload with neither is nobody's.
 */
export function ownerOf(spec: Pick<WorkloadSpec, 'labels'>): WorkloadOwner | undefined {
  const labels = spec.labels ?? {};
  if (labels[OwnerLabels.deployment]) return { kind: 'deployment', name: labels[OwnerLabels.deployment] };
  if (labels[OwnerLabels.instance]) return { kind: 'instance', name: labels[OwnerLabels.instance] };
  return undefined;
}
