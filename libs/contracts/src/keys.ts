/**
 * How records are named across services, declared once so that the scheduler, the node
 * runtimes and the CLI agree. Names are DNS-1123 labels (no '.'), so '.' separates KV key parts.
 */

/** Labels the deployment and instance controllers put on the workloads they own. */
export const OwnerLabels = {
  deployment: 'gpufleet.io/deployment',
  role: 'gpufleet.io/role',
  ordinal: 'gpufleet.io/ordinal',
  instance: 'gpufleet.io/instance',
} as const;

/** One pod of a workload on a node. */
export interface PodRef {
  node: string;
  namespace: string;
  workload: string;
  podSet: string;
  replica: number;
  pod: number;
}

/** Key of a pod in the pods bucket: "<node>.<namespace>.<workload>.<pod_set>.<replica>.<pod>". */
export function podStoreKey(ref: PodRef): string {
  return `${ref.node}.${ref.namespace}.${ref.workload}.${ref.podSet}.${ref.replica}.${ref.pod}`;
}

/** The inverse of podStoreKey; undefined for a key of another shape. */
export function parsePodStoreKey(key: string): PodRef | undefined {
  const parts = key.split('.');
  if (parts.length !== 6) return undefined;
  const [node, namespace, workload, podSet, replica, pod] = parts;
  if (!/^\d+$/.test(replica) || !/^\d+$/.test(pod)) return undefined;
  return { node, namespace, workload, podSet, replica: Number(replica), pod: Number(pod) };
}

/** Node-local id of a pod's process, also used in log paths: "<namespace>/<workload>/<pod_set>/<replica>/<pod>". */
export function podId(ref: Omit<PodRef, 'node'>): string {
  return `${ref.namespace}/${ref.workload}/${ref.podSet}/${ref.replica}/${ref.pod}`;
}

/** Where a node runtime serves a pod's log: `<runtime_url>` + this. */
export function podLogsPath(ref: Omit<PodRef, 'node'>): string {
  return `/v1/pods/${podId(ref)}/logs`;
}
