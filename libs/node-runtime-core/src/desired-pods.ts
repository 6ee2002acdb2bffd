import {
  parseWorkloadKey,
  podId,
  podStoreKey,
  storeKey,
  WorkloadPhase,
  type NodeLedger,
  type PodPlacement,
  type PodRef,
  type PodTemplate,
  type Workload,
} from '@gpufleet/contracts';

/** One pod this node should run: placed here by the ledger, of an admitted workload with a template. */
export interface DesiredPod {
  /** Key in the pods bucket: "<node>.<namespace>.<workload>.<pod_set>.<replica>.<pod>". */
  readonly key: string;
  readonly ref: PodRef;
  /** "<namespace>/<workload>/<pod_set>/<replica>/<pod>". */
  readonly id: string;
  readonly template: PodTemplate;
  readonly placement: PodPlacement;
}

/**
 * The pods `node` should run: one per ledger entry whose workload exists, is Admitted and has a
 * template. A workload that only holds devices (no template), is still being placed, or has
 * finished runs nothing. `workloads` is keyed like the workloads bucket ("<namespace>.<name>").
 * Sorted by key; a pod listed twice in the ledger is run once.
 */
export function desiredPods(node: string, ledger: NodeLedger | undefined, workloads: { get(storeKey: string): Workload | undefined }): DesiredPod[] {
  const out = new Map<string, DesiredPod>();
  for (const entry of ledger?.entries ?? []) {
    const placement = entry.pod;
    if (!placement) continue;
    const workload = parseWorkloadKey(entry.workload) ? workloads.get(storeKey(entry.workload)) : undefined;
    if (!workload?.spec || workload.status?.phase !== WorkloadPhase.WORKLOAD_PHASE_ADMITTED) continue;
    const template = workload.spec.template;
    if (!template || (!template.engine && !template.instance)) continue;
    const ref: PodRef = {
      node,
      namespace: workload.spec.namespace,
      workload: workload.spec.name,
      podSet: placement.podSet,
      replica: placement.replica,
      pod: placement.pod,
    };
    const key = podStoreKey(ref);
    if (out.has(key)) continue;
    out.set(key, { key, ref, id: podId(ref), template, placement });
  }
  return [...out.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}
