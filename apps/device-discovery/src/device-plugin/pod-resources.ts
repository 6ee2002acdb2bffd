import * as grpc from '@grpc/grpc-js';
import { podresources } from '@gpufleet/contracts/kubelet';
import { RESOURCE_DOMAIN } from '@gpufleet/device-plugin-core';

/** Device ids the kubelet assigned to one container, of one resource. */
export interface AssignedDevices {
  readonly namespace: string;
  readonly pod: string;
  readonly container: string;
  readonly resource: string;
  readonly deviceIds: readonly string[];
}

export interface KubeletDevices {
  /** What running containers hold (PodResourcesLister.List). */
  readonly assigned: readonly AssignedDevices[];
  /** Per resource, the device ids the kubelet may hand out (GetAllocatableResources). */
  readonly allocatable: Readonly<Record<string, readonly string[]>>;
}

export interface PodResourcesOptions {
  readonly timeoutMs?: number;
  /** Only resources of this domain ("gpufleet.io" by default); '' for every resource. */
  readonly domain?: string;
}

/**
 * Reads the kubelet's pod-resources API (`<pod-resources dir>/kubelet.sock`): which device ids of
 * gpufleet's resources the kubelet gave to which container, and which it can give. The node
 * agent can compare this with the scheduler's devices ledger; that reconciliation is not done yet.
 */
export async function readKubeletDevices(socketPath: string, options: PodResourcesOptions = {}): Promise<KubeletDevices> {
  const client = new podresources.PodResourcesListerClient(`unix:${socketPath}`, grpc.credentials.createInsecure());
  const deadline = () => ({ deadline: Date.now() + (options.timeoutMs ?? 5000) });
  const domain = options.domain ?? RESOURCE_DOMAIN;
  const ours = (resource: string) => domain === '' || resource.startsWith(`${domain}/`);
  try {
    const list = await new Promise<podresources.ListPodResourcesResponse>((resolve, reject) =>
      client.list({}, new grpc.Metadata(), deadline(), (err, res) => (err ? reject(err) : resolve(res))),
    );
    const allocatableResponse = await new Promise<podresources.AllocatableResourcesResponse>((resolve, reject) =>
      client.getAllocatableResources({}, new grpc.Metadata(), deadline(), (err, res) => (err ? reject(err) : resolve(res))),
    );
    const assigned: AssignedDevices[] = [];
    for (const pod of list.podResources) {
      for (const container of pod.containers) {
        for (const d of container.devices) {
          if (ours(d.resourceName)) assigned.push({ namespace: pod.namespace, pod: pod.name, container: container.name, resource: d.resourceName, deviceIds: d.deviceIds });
        }
      }
    }
    const allocatable: Record<string, string[]> = {};
    for (const d of allocatableResponse.devices) {
      if (ours(d.resourceName)) (allocatable[d.resourceName] ??= []).push(...d.deviceIds);
    }
    return { assigned, allocatable };
  } finally {
    client.close();
  }
}
