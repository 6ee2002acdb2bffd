/**
 * How records are named across services, declared once so that the scheduler, the node
 * runtimes, the router and the CLI agree. Names are DNS-1123 labels (no '.'), so '.' separates
 * KV key parts. Keys of the nodes, node-status and ledger buckets are node names as they are;
 * bucket names are in events.ts (`Buckets`), Redis keys in redis-keys.ts. Documented in
 * docs/events.md#key-value-buckets.
 */

/** Labels the deployment and instance controllers put on the workloads they own. */
export const OwnerLabels = {
  deployment: 'gpufleet.io/deployment',
  role: 'gpufleet.io/role',
  ordinal: 'gpufleet.io/ordinal',
  instance: 'gpufleet.io/instance',
  /** The uid of the owning record (ModelDeployment.uid, GPUInstance.uid), written by the scheduler. */
  ownerUid: 'gpufleet.io/owner-uid',
} as const;

/** A namespaced record: a workload, LocalQueue, ModelDeployment or GPUInstance. */
export interface NamespacedName {
  namespace: string;
  name: string;
}

/** A name part of a key: not empty, no '/' (it separates record keys) and no '.' (it separates KV key parts). */
const KEY_PART = /^[^/.]+$/;

/**
 * "<namespace>/<name>": how the devices ledger (`LedgerEntry.workload`), events, queues, errors
 * and the scheduler's in-memory maps name a namespaced record (workloads, LocalQueues,
 * deployments and instances alike).
 */
export function workloadKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export function keyOfSpec(spec: Readonly<NamespacedName>): string {
  return workloadKey(spec.namespace, spec.name);
}

/** The inverse of workloadKey; undefined for a key of another shape (no '/', more than one, an empty part, a '.'). */
export function parseWorkloadKey(key: string): NamespacedName | undefined {
  const slash = key.indexOf('/');
  const namespace = key.slice(0, slash);
  const name = key.slice(slash + 1);
  if (slash < 0 || !KEY_PART.test(namespace) || !KEY_PART.test(name)) return undefined;
  return { namespace, name };
}

/**
 * Key of a namespaced record in its bucket (workloads, localqueues, deployments, instances):
 * "<namespace>.<name>" for the record key "<namespace>/<name>". KV keys cannot hold '/', and
 * names are DNS-1123 labels without '.', so the dot is unambiguous.
 */
export function storeKey(key: string): string {
  return key.replace('/', '.');
}

/** The inverse of storeKey; undefined for a bucket key of another shape. */
export function parseStoreKey(stored: string): NamespacedName | undefined {
  const parts = stored.split('.');
  if (parts.length !== 2 || !parts.every((p) => KEY_PART.test(p))) return undefined;
  return { namespace: parts[0], name: parts[1] };
}

/**
 * The record key of a bucket key ("<namespace>.<name>" → "<namespace>/<name>"). A bucket key of
 * another shape (written by hand) is returned as it is: it holds no '/', so it cannot be
 * mistaken for a record's key.
 */
export function keyOfStoreKey(stored: string): string {
  const ref = parseStoreKey(stored);
  return ref ? keyOfSpec(ref) : stored;
}

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

/** The inverse of podStoreKey; undefined for a key of another shape (six parts, none empty, numeric replica and pod). */
export function parsePodStoreKey(key: string): PodRef | undefined {
  const parts = key.split('.');
  if (parts.length !== 6 || parts.some((p) => p === '')) return undefined;
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
