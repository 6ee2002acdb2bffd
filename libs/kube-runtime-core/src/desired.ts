import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { OwnerLabels, PodRuntimeStatus, storeKey, workloadKey, type NodeLedger, type Workload } from '@gpufleet/contracts';
import { EngineSpecError } from '@gpufleet/engine-presets';
import { desiredPods, groupSize, nvlinkAcrossPods, PodPlanError, WAITING_REASONS, type PodPlanErrorReason } from '@gpufleet/node-runtime-core';
import { podNameOf } from './names';
import type { ObjectName } from './reconcile-plan';
import { DEFAULT_RENDEZVOUS_PORT, podManifestOf, type KubeDesiredPod, type KubePodContext, type OwnerObjectRef } from './pod-manifest';
import { deploymentServiceOf, groupServiceOf, instanceServiceOf, type DeploymentServiceInput, type SshServiceType } from './services';

export interface KubeDesiredPodsOptions {
  /** The custom resource owning a workload's pods (from its owner labels), when the cluster has one. */
  ownerOf?(workload: Workload): OwnerObjectRef | undefined;
  /** GPUInstanceSpec.image of an instance, by namespace and name. */
  instanceImageOf?(namespace: string, instance: string): string | undefined;
}

/**
 * Every pod the cluster should run: node-runtime-core's `desiredPods` of each node's ledger (one
 * pod per ledger entry of an Admitted workload with a template), with the workload's labels, the
 * owner and an instance's image. Sorted by pod key.
 */
export function desiredKubePods(
  ledgers: Iterable<NodeLedger>,
  workloads: { get(storeKey: string): Workload | undefined },
  options: KubeDesiredPodsOptions = {},
): KubeDesiredPod[] {
  const out: KubeDesiredPod[] = [];
  for (const ledger of ledgers) {
    for (const pod of desiredPods(ledger.node, ledger, workloads)) {
      const workload = workloads.get(storeKey(workloadKey(pod.ref.namespace, pod.ref.workload)));
      const labels = workload?.spec?.labels ?? {};
      const owner = workload ? options.ownerOf?.(workload) : undefined;
      const instance = pod.template.instance ? pod.template.instance.instance || labels[OwnerLabels.instance] || '' : '';
      const image = instance ? options.instanceImageOf?.(pod.ref.namespace, instance) : undefined;
      const size = groupSize(pod, workload);
      const group = size > 1 && pod.template.engine ? { size, nvlinkAcrossPods: nvlinkAcrossPods(pod, workload) } : undefined;
      out.push({ ...pod, workloadLabels: labels, ...(owner ? { owner } : {}), ...(image ? { image } : {}), ...(group ? { group } : {}) });
    }
  }
  return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** A pod that cannot become a Pod: reported Failed with the same reason and message as on the process runtime. */
export interface FailedManifest {
  readonly pod: KubeDesiredPod;
  readonly reason: PodPlanErrorReason | 'INTERNAL';
  readonly message: string;
}

/**
 * A pod that waits for its weights: no Pod is made for it, and a Pod it already has is kept (the
 * process runtime keeps a running engine whose copy stops being Ready; only a new start waits).
 */
const HOLDING_REASONS: ReadonlySet<FailedManifest['reason']> = new Set(['WEIGHTS_PENDING']);

export interface DesiredObjects {
  readonly pods: V1Pod[];
  readonly services: V1Service[];
  readonly failed: FailedManifest[];
  /** The Pods (in the gpufleet namespace) of the failed pods that wait for their weights: `reconcilePlan` leaves a running one alone. */
  readonly held: ObjectName[];
}

export interface DesiredObjectsInput {
  readonly pods: readonly KubeDesiredPod[];
  /** Every deployment that exists (replicas or not): one Service each. */
  readonly deployments?: readonly DeploymentServiceInput[];
  /** Type of the instances' SSH Services; default NodePort. */
  readonly sshServiceType?: SshServiceType;
}

/** The Pods and Services the cluster should hold, and the pods that cannot be made (as data, never thrown). */
export function desiredObjects(input: DesiredObjectsInput, ctx: KubePodContext): DesiredObjects {
  const pods: V1Pod[] = [];
  const failed: FailedManifest[] = [];
  const held: ObjectName[] = [];
  const services = new Map<string, V1Service>();
  for (const pod of input.pods) {
    try {
      pods.push(podManifestOf(pod, ctx));
    } catch (err) {
      if (err instanceof PodPlanError) failed.push({ pod, reason: err.reason, message: err.message });
      else if (err instanceof EngineSpecError) failed.push({ pod, reason: 'INVALID_ENGINE_SPEC', message: err.message });
      else failed.push({ pod, reason: 'INTERNAL', message: `INTERNAL: ${(err as Error).message ?? String(err)}` });
      if (HOLDING_REASONS.has(failed[failed.length - 1].reason)) held.push({ namespace: pod.ref.namespace, name: podNameOf(pod.ref) });
      continue;
    }
    if (pod.group) {
      // Every pod of the replica names the same Service; it is made with the first and kept while any pod is desired.
      const service = groupServiceOf({ namespace: pod.ref.namespace, workload: pod.ref.workload, podSet: pod.ref.podSet, replica: pod.ref.replica, rendezvousPort: ctx.rendezvousPort ?? DEFAULT_RENDEZVOUS_PORT, ...(pod.owner ? { owner: pod.owner } : {}) });
      services.set(`${service.metadata!.namespace}/${service.metadata!.name}`, service);
    }
    const instance = pod.template.instance;
    if (instance) {
      const name = instance.instance || pod.workloadLabels?.[OwnerLabels.instance] || pod.ref.workload;
      const service = instanceServiceOf({ namespace: pod.ref.namespace, name, uid: pod.workloadLabels?.[OwnerLabels.ownerUid] ?? '', ...(pod.owner ? { owner: pod.owner } : {}), ...(input.sshServiceType ? { type: input.sshServiceType } : {}) });
      services.set(`${service.metadata!.namespace}/${service.metadata!.name}`, service);
    }
  }
  for (const deployment of input.deployments ?? []) {
    const service = deploymentServiceOf(deployment);
    services.set(`${service.metadata!.namespace}/${service.metadata!.name}`, service);
  }
  return { pods, services: [...services.values()], failed, held };
}

/**
 * The pod record of a pod that has no Pod because it cannot be made: `Starting` while it waits
 * (WEIGHTS_PENDING with the node's progress), else `Failed`, with the process runtime's message.
 */
export function failedManifestStatusOf(failed: FailedManifest, now: Date): PodRuntimeStatus {
  const waiting = failed.reason !== 'INTERNAL' && WAITING_REASONS.has(failed.reason);
  return PodRuntimeStatus.fromPartial({ ...failed.pod.ref, state: waiting ? 'Starting' : 'Failed', message: failed.message, updatedAt: now, templateHash: failed.pod.template.engine?.templateHash ?? '' });
}
