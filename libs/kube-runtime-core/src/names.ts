import { createHash } from 'crypto';
import { OwnerLabels, type PodRef } from '@gpufleet/contracts';

/** The label that marks every object gpufleet's Kubernetes runtime writes; it never touches an object without it. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'gpufleet';

/** The field manager of server-side apply: the owner of every field gpufleet sets. */
export const FIELD_MANAGER = 'gpufleet';

/** Labels on the Pods and Services of the Kubernetes runtime, next to the owner labels of libs/contracts. */
export const KubeLabels = {
  ...OwnerLabels,
  managedBy: MANAGED_BY_LABEL,
  /** The gpufleet namespace of the pod (the same as its Kubernetes namespace, kept for selectors across namespaces). */
  namespace: 'gpufleet.io/namespace',
  workload: 'gpufleet.io/workload',
  podSet: 'gpufleet.io/pod-set',
  replica: 'gpufleet.io/replica',
  pod: 'gpufleet.io/pod',
  node: 'gpufleet.io/node',
  /** `true` on the pods a deployment's Service sends traffic to: pod 0 of each server or decode replica. */
  endpoint: 'gpufleet.io/endpoint',
  /** `leader` or `worker` on the pods of a multi-node replica (pod 0 leads). */
  groupRole: 'gpufleet.io/group-role',
  /** What the object is: `engine`, `instance`, `endpoint` (a deployment's Service), `ssh` (an instance's Service), `group` (a multi-node replica's headless Service). */
  component: 'app.kubernetes.io/component',
} as const;

export const KubeAnnotations = {
  /** JSON of the devices the scheduler assigned (`DeviceAssignment`): the device plugin's Allocate honours it. */
  devices: 'gpufleet.io/devices',
  /** Digest of everything gpufleet set on the object (but this annotation): a pod whose hash changed is replaced. */
  specHash: 'gpufleet.io/spec-hash',
  /** `<namespace>/<workload>/<pod_set>/<replica>/<pod>` (podId of libs/contracts). */
  pod: 'gpufleet.io/pod-id',
  templateHash: 'gpufleet.io/template-hash',
} as const;

const DNS_LABEL_MAX = 63;
const HASH_CHARS = 10;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * A DNS-1123 label from `parts` joined by '-': lower-cased, other characters turned into '-',
 * at most 63 characters. A name that does not fit keeps its start and ends with a hash of the
 * whole, so it is still deterministic and two long names that share a prefix do not collide.
 */
export function dnsLabel(...parts: readonly (string | number)[]): string {
  const joined = parts.map(String).join('-');
  if (joined.length <= DNS_LABEL_MAX && DNS_LABEL.test(joined)) return joined;
  // Anything changed gets the hash: "A_b" and "a-b" must not end up as the same name.
  const hash = createHash('sha256').update(joined).digest('hex').slice(0, HASH_CHARS);
  const head = joined.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/-+/g, '-').replace(/^-+/, '').slice(0, DNS_LABEL_MAX - HASH_CHARS - 1).replace(/-+$/, '');
  return head ? `${head}-${hash}` : `gf-${hash}`;
}

/**
 * The Pod of one gpufleet pod: `<workload>-<pod_set>-<replica>-<pod>`. Workload names are
 * unique in their namespace and already carry the deployment, role and ordinal
 * (`llama-s0-bcdfg`), so the name is stable for the life of the workload and new when a replica
 * is recreated (a fresh workload suffix).
 */
export function podNameOf(ref: Pick<PodRef, 'workload' | 'podSet' | 'replica' | 'pod'>): string {
  return dnsLabel(ref.workload, ref.podSet, ref.replica, ref.pod);
}

/** The Service of a deployment: its own name, so the endpoint is `<deployment>.<namespace>.svc`. */
export function deploymentServiceName(deployment: string): string {
  return dnsLabel(deployment);
}

/** The SSH Service of an instance. */
export function instanceServiceName(instance: string): string {
  return dnsLabel(instance, 'ssh');
}
