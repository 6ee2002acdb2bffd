import type { V1Service } from '@kubernetes/client-node';
import { withSpecHash } from './hash';
import { ownerReferenceOf, DEFAULT_ENGINE_PORT, groupServiceName, type OwnerObjectRef } from './pod-manifest';
import { deploymentServiceName, instanceServiceName, KubeLabels, MANAGED_BY } from './names';

export interface DeploymentServiceInput {
  readonly namespace: string;
  readonly name: string;
  /** ModelDeployment.uid: the Service selects only this incarnation's pods. '' for records from before uids. */
  readonly uid: string;
  readonly owner?: OwnerObjectRef;
  /** The Service's port; default DEFAULT_ENGINE_PORT. */
  readonly port?: number;
}

/**
 * The endpoint of a deployment: a ClusterIP Service named after it, port `http`, selecting the
 * pods that serve (pod 0 of each server or decode replica) of this deployment and owner uid.
 * Kubernetes puts only Ready pods behind it. It exists as long as the deployment does, replicas
 * or not, so its address survives a scale to zero.
 */
export function deploymentServiceOf(input: DeploymentServiceInput): V1Service {
  const selector: Record<string, string> = {
    [KubeLabels.managedBy]: MANAGED_BY,
    [KubeLabels.deployment]: input.name,
    [KubeLabels.endpoint]: 'true',
    ...(input.uid ? { [KubeLabels.ownerUid]: input.uid } : {}),
  };
  return withSpecHash<V1Service>({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: deploymentServiceName(input.name),
      namespace: input.namespace,
      labels: { [KubeLabels.managedBy]: MANAGED_BY, [KubeLabels.component]: 'endpoint', [KubeLabels.namespace]: input.namespace, [KubeLabels.deployment]: input.name, ...(input.uid ? { [KubeLabels.ownerUid]: input.uid } : {}) },
      annotations: {},
      ...(input.owner ? { ownerReferences: [ownerReferenceOf(input.owner)] } : {}),
    },
    spec: {
      type: 'ClusterIP',
      selector,
      ports: [{ name: 'http', port: input.port ?? DEFAULT_ENGINE_PORT, targetPort: 'http', protocol: 'TCP', appProtocol: 'http' }],
    },
  });
}

export type SshServiceType = 'NodePort' | 'ClusterIP' | 'LoadBalancer';

export interface InstanceServiceInput {
  readonly namespace: string;
  /** The GPUInstance's name. */
  readonly name: string;
  readonly uid: string;
  readonly owner?: OwnerObjectRef;
  /** Default `NodePort`: reachable from outside the cluster at `<node address>:<nodePort>`. */
  readonly type?: SshServiceType;
  /** The Service's port; default 22. */
  readonly port?: number;
}

/**
 * SSH to an instance: port `ssh` (22 by default) to the sidecar's 2222. NodePort by default, and
 * the node port is left to Kubernetes to allocate (gpufleet does not own the field, so server-side
 * apply keeps the allocated one).
 */
export function instanceServiceOf(input: InstanceServiceInput): V1Service {
  const selector: Record<string, string> = {
    [KubeLabels.managedBy]: MANAGED_BY,
    [KubeLabels.instance]: input.name,
    ...(input.uid ? { [KubeLabels.ownerUid]: input.uid } : {}),
  };
  return withSpecHash<V1Service>({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: instanceServiceName(input.name),
      namespace: input.namespace,
      labels: { [KubeLabels.managedBy]: MANAGED_BY, [KubeLabels.component]: 'ssh', [KubeLabels.namespace]: input.namespace, [KubeLabels.instance]: input.name, ...(input.uid ? { [KubeLabels.ownerUid]: input.uid } : {}) },
      annotations: {},
      ...(input.owner ? { ownerReferences: [ownerReferenceOf(input.owner)] } : {}),
    },
    spec: {
      type: input.type ?? 'NodePort',
      selector,
      ports: [{ name: 'ssh', port: input.port ?? 22, targetPort: 'ssh', protocol: 'TCP' }],
    },
  });
}

export interface GroupServiceInput {
  readonly namespace: string;
  /** The replica's workload. */
  readonly workload: string;
  readonly podSet: string;
  readonly replica: number;
  /** The leader's rendezvous port (Ray's GCS, vLLM's data-parallel RPC, SGLang's dist-init). */
  readonly rendezvousPort: number;
  readonly owner?: OwnerObjectRef;
}

/**
 * How the pods of a multi-node replica find each other on Kubernetes: a headless Service (no
 * cluster IP, DNS records per pod) selecting every pod of the replica, published before they are
 * ready (a worker must resolve its leader while the group is still forming). A pod whose
 * `subdomain` is this Service's name and `hostname` its own pod name is reachable at
 * `<pod name>.<service>.<namespace>.svc`: the leader's is the group's leader address.
 */
export function groupServiceOf(input: GroupServiceInput): V1Service {
  const selector = {
    [KubeLabels.managedBy]: MANAGED_BY,
    [KubeLabels.workload]: input.workload,
    [KubeLabels.podSet]: input.podSet,
    [KubeLabels.replica]: String(input.replica),
  };
  return withSpecHash<V1Service>({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: groupServiceName(input),
      namespace: input.namespace,
      labels: { [KubeLabels.managedBy]: MANAGED_BY, [KubeLabels.component]: 'group', [KubeLabels.namespace]: input.namespace, [KubeLabels.workload]: input.workload },
      annotations: {},
      ...(input.owner ? { ownerReferences: [ownerReferenceOf(input.owner)] } : {}),
    },
    spec: {
      clusterIP: 'None',
      publishNotReadyAddresses: true,
      selector,
      ports: [{ name: 'rendezvous', port: input.rendezvousPort, targetPort: input.rendezvousPort, protocol: 'TCP' }],
    },
  });
}

