import { OwnerLabels, type WorkloadSpec } from '@gpufleet/contracts';

/** The kinds that own workloads: each has its own controller. */
export type OwnerKind = 'deployment' | 'instance';

/** Which record owns a workload: its kind and name (in the workload's namespace), and that record's uid. */
export interface WorkloadOwner {
  kind: OwnerKind;
  name: string;
  /** '' for workloads created before records had uids. */
  uid: string;
}

/**
 * The owner a workload's labels name. A deployment label wins over an instance label, so a
 * workload is owned by exactly one controller; a workload with neither is nobody's.
 */
export function ownerOf(spec: Pick<WorkloadSpec, 'labels'>): WorkloadOwner | undefined {
  const labels = spec.labels ?? {};
  const uid = labels[OwnerLabels.ownerUid] ?? '';
  if (labels[OwnerLabels.deployment]) return { kind: 'deployment', name: labels[OwnerLabels.deployment], uid };
  if (labels[OwnerLabels.instance]) return { kind: 'instance', name: labels[OwnerLabels.instance], uid };
  return undefined;
}

/** A workload spec labelled as owned by the record with `uid` (none for a record from before uids). */
export function withOwnerUid(spec: WorkloadSpec, uid: string): WorkloadSpec {
  return uid ? { ...spec, labels: { ...spec.labels, [OwnerLabels.ownerUid]: uid } } : spec;
}

/** Whether a workload belongs to this incarnation of its owner (same uid; records and workloads from before uids match each other). */
export function ownedBy(spec: Pick<WorkloadSpec, 'labels'>, uid: string): boolean {
  return (spec.labels?.[OwnerLabels.ownerUid] ?? '') === uid;
}
