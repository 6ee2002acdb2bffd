import { CreateInstanceRequest, DeleteInstanceRequest, GPUInstanceSpec, InstancePhase, SetInstanceStoppedRequest, type GPUInstance } from '@gpufleet/contracts';
import { validateInstanceSpec, type DeploymentValidationContext } from '@gpufleet/deployments-core';
import type { ToResourceOptions } from './model-deployment';
import { needsCluster, OFFLINE_CONTEXT } from './offline';
import { checkEnvelope, converted, GPUFLEET_GROUP, GPUFLEET_VERSION, phaseName, withoutKeys, type Converted, type CustomResource } from './resource';
import { atResource, bool, checkShape, int32, list, map, object, podResources, secretKeyRef, str } from './shape';

export const GPU_INSTANCE_SPEC_SHAPE = object({
  localQueue: str,
  priority: int32,
  instanceType: str,
  resources: podResources,
  command: str,
  image: str,
  env: map(str),
  sshPublicKeys: list(str),
  stop: bool,
  labels: map(str),
  envFromSecret: map(secretKeyRef),
});

export type GPUInstanceResourceSpec = Record<string, unknown>;

export interface GPUInstanceResourceStatus {
  /** `Pending`, `Starting`, `Running`, `Stopped`, `Failed`, `Deleting`. */
  phase: string;
  workload: string;
  node: string;
  sshHost: string;
  sshPort: number;
  sshUser: string;
  sshHostKey: string;
  acceleratorIds: string[];
  devicesEnv: Record<string, string>;
  message: string;
  logsUrl: string;
  observedGeneration?: number;
  recordUid: string;
  recordGeneration: number;
}

export type GPUInstanceResource = CustomResource<'GPUInstance', GPUInstanceResourceSpec, GPUInstanceResourceStatus>;

/** A GPUInstance resource as the gRPC spec: its JSON shape, then deployments-core's `validateInstanceSpec`, fields named as in the resource. */
export function gpuInstanceSpecOf(resource: GPUInstanceResource, ctx?: DeploymentValidationContext): Converted<GPUInstanceSpec> {
  const shape = [...checkEnvelope(resource, 'GPUInstance', true), ...checkShape(GPU_INSTANCE_SPEC_SHAPE, resource.spec, 'spec')];
  if (shape.length > 0) return converted(GPUInstanceSpec.fromPartial({}), shape);
  const spec = GPUInstanceSpec.fromJSON({ ...resource.spec, name: resource.metadata.name, namespace: resource.metadata.namespace });
  const problems = validateInstanceSpec(spec, ctx ?? OFFLINE_CONTEXT).filter((p) => ctx || !needsCluster(p));
  return converted(spec, problems.map(atResource));
}

export function createInstanceRequestOf(resource: GPUInstanceResource, ctx?: DeploymentValidationContext): Converted<CreateInstanceRequest> {
  const spec = gpuInstanceSpecOf(resource, ctx);
  return spec.ok ? { ok: true, value: { spec: spec.value } } : spec;
}

/** `spec.stop` of the resource as the call that applies it to an existing instance. */
export function setInstanceStoppedRequestOf(resource: GPUInstanceResource): SetInstanceStoppedRequest {
  return { namespace: resource.metadata.namespace ?? '', name: resource.metadata.name ?? '', stop: resource.spec.stop === true };
}

export function deleteInstanceRequestOf(resource: Pick<GPUInstanceResource, 'metadata'>): DeleteInstanceRequest {
  return { namespace: resource.metadata.namespace ?? '', name: resource.metadata.name ?? '' };
}

export function gpuInstanceResourceOf(instance: GPUInstance, options: ToResourceOptions = {}): GPUInstanceResource {
  const spec = instance.spec ?? GPUInstanceSpec.fromPartial({});
  const s = instance.status;
  return {
    apiVersion: `${GPUFLEET_GROUP}/${GPUFLEET_VERSION}`,
    kind: 'GPUInstance',
    metadata: { ...options.metadata, name: spec.name, namespace: spec.namespace },
    spec: withoutKeys(GPUInstanceSpec.toJSON(spec), ['name', 'namespace']),
    status: {
      phase: phaseName(s?.phase ?? InstancePhase.INSTANCE_PHASE_UNSPECIFIED, 'INSTANCE_PHASE_'),
      workload: s?.workload ?? '',
      node: s?.node ?? '',
      sshHost: s?.sshHost ?? '',
      sshPort: s?.sshPort ?? 0,
      sshUser: s?.sshUser ?? '',
      sshHostKey: s?.sshHostKey ?? '',
      acceleratorIds: [...(s?.acceleratorIds ?? [])],
      devicesEnv: { ...(s?.devicesEnv ?? {}) },
      message: s?.message ?? '',
      logsUrl: s?.logsUrl ?? '',
      ...(options.observedGeneration !== undefined ? { observedGeneration: options.observedGeneration } : {}),
      recordUid: instance.uid,
      recordGeneration: instance.generation,
    },
  };
}
