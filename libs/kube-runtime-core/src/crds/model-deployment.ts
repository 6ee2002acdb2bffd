import {
  CreateDeploymentRequest,
  DeleteDeploymentRequest,
  DeploymentPhase,
  ModelDeploymentSpec,
  ReplicaStatus,
  UpdateDeploymentRequest,
  type ModelDeployment,
} from '@gpufleet/contracts';
import { validateDeploymentSpec, type DeploymentValidationContext } from '@gpufleet/deployments-core';
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { needsCluster, OFFLINE_CONTEXT } from './offline';
import { checkEnvelope, converted, GPUFLEET_GROUP, GPUFLEET_VERSION, phaseName, withoutKeys, type Converted, type CustomResource } from './resource';
import { atResource, checkShape, int32, list, map, object, podResources, secretKeyRef, str, topology, uint32, uint64 } from './shape';

/** The spec of a ModelDeployment resource: ModelDeploymentSpec in proto3 JSON, name and namespace in the metadata. */
export const MODEL_DEPLOYMENT_SPEC_SHAPE = object({
  localQueue: str,
  priority: int32,
  model: str,
  servedModelName: str,
  engine: object({
    engine: str,
    version: str,
    mode: str,
    customCommand: str,
    multiNode: str,
    extraArgs: list(str),
    env: map(str),
    speculative: object({ method: str, draftModel: str, numSpeculativeTokens: uint32 }),
    kvOffload: object({ connector: str, cpuBytes: uint64 }),
    envFromSecret: map(secretKeyRef),
  }),
  roles: list(
    object({ role: str, replicas: uint32, size: uint32, instanceType: str, resources: podResources, topology, extraArgs: list(str), env: map(str), envFromSecret: map(secretKeyRef) }),
  ),
  labels: map(str),
});

/** proto3 JSON of ModelDeploymentSpec without name and namespace. */
export type ModelDeploymentResourceSpec = Record<string, unknown>;

export interface ResourceCondition {
  type: string;
  status: 'True' | 'False';
  reason: string;
  message: string;
  lastTransitionTime?: string;
  /** metav1.Condition's: the object's generation the condition was set for. */
  observedGeneration?: number;
}

export interface ModelDeploymentResourceStatus {
  /** `Starting`, `Ready`, `Degraded`, `Deleting`; '' before the controller first acts. */
  phase: string;
  desiredReplicas: number;
  readyReplicas: number;
  updatedReplicas: number;
  replicas: unknown[];
  conditions: ResourceCondition[];
  endpoints: string[];
  templateHash: string;
  /** metadata.generation of the resource the status is for. */
  observedGeneration?: number;
  /** The uid of gpufleet's record (ModelDeployment.uid), which its pods carry in gpufleet.io/owner-uid. */
  recordUid: string;
  /** gpufleet's own generation of the record. */
  recordGeneration: number;
}

export type ModelDeploymentResource = CustomResource<'ModelDeployment', ModelDeploymentResourceSpec, ModelDeploymentResourceStatus>;

/**
 * A ModelDeployment resource as the gRPC spec, checked twice: its JSON shape (types, unknown
 * fields, one accelerator mode), then deployments-core's `validateDeploymentSpec` (names,
 * bounds, engine refusals, InstanceTypes and queues when `ctx` knows the cluster). Every problem
 * names the resource's field: `spec.roles[0].replicas: expected …`, `metadata.name: expected …`.
 */
export function modelDeploymentSpecOf(resource: ModelDeploymentResource, ctx?: DeploymentValidationContext): Converted<ModelDeploymentSpec> {
  const shape = [...checkEnvelope(resource, 'ModelDeployment', true), ...checkShape(MODEL_DEPLOYMENT_SPEC_SHAPE, resource.spec, 'spec')];
  if (shape.length > 0) return converted(ModelDeploymentSpec.fromPartial({}), shape);
  const spec = ModelDeploymentSpec.fromJSON({ ...resource.spec, name: resource.metadata.name, namespace: resource.metadata.namespace });
  const problems = validateDeploymentSpec(spec, ctx ?? OFFLINE_CONTEXT).filter((p) => ctx || !needsCluster(p));
  return converted(spec, problems.map(atResource));
}

export function createDeploymentRequestOf(resource: ModelDeploymentResource, ctx?: DeploymentValidationContext): Converted<CreateDeploymentRequest> {
  const spec = modelDeploymentSpecOf(resource, ctx);
  return spec.ok ? { ok: true, value: { spec: spec.value } } : spec;
}

export function updateDeploymentRequestOf(resource: ModelDeploymentResource, ctx?: DeploymentValidationContext): Converted<UpdateDeploymentRequest> {
  const spec = modelDeploymentSpecOf(resource, ctx);
  return spec.ok ? { ok: true, value: { spec: spec.value } } : spec;
}

export function deleteDeploymentRequestOf(resource: Pick<ModelDeploymentResource, 'metadata'>): DeleteDeploymentRequest {
  return { namespace: resource.metadata.namespace ?? '', name: resource.metadata.name ?? '' };
}

export interface ToResourceOptions {
  /** The resource's metadata.generation this status answers (status.observedGeneration). */
  readonly observedGeneration?: number;
  /** Metadata to keep (uid, resourceVersion, labels); name and namespace come from the record. */
  readonly metadata?: V1ObjectMeta;
}

/** A gRPC ModelDeployment as a resource: its spec (proto3 JSON, defaults left out) and its status. */
export function modelDeploymentResourceOf(deployment: ModelDeployment, options: ToResourceOptions = {}): ModelDeploymentResource {
  const spec = deployment.spec ?? ModelDeploymentSpec.fromPartial({});
  const status = deployment.status;
  return {
    apiVersion: `${GPUFLEET_GROUP}/${GPUFLEET_VERSION}`,
    kind: 'ModelDeployment',
    metadata: { ...options.metadata, name: spec.name, namespace: spec.namespace },
    spec: withoutKeys(ModelDeploymentSpec.toJSON(spec), ['name', 'namespace']),
    status: {
      phase: phaseName(status?.phase ?? DeploymentPhase.DEPLOYMENT_PHASE_UNSPECIFIED, 'DEPLOYMENT_PHASE_'),
      desiredReplicas: status?.desiredReplicas ?? 0,
      readyReplicas: status?.readyReplicas ?? 0,
      updatedReplicas: status?.updatedReplicas ?? 0,
      replicas: (status?.replicas ?? []).map((r) => ReplicaStatus.toJSON(r)),
      conditions: (status?.conditions ?? []).map((c) => ({
        type: c.type,
        status: c.status ? 'True' : 'False',
        // metav1.Condition requires a reason.
        reason: c.reason || c.type,
        message: c.message,
        ...(c.lastTransition ? { lastTransitionTime: c.lastTransition.toISOString() } : {}),
      })),
      endpoints: [...(status?.endpoints ?? [])],
      templateHash: status?.templateHash ?? '',
      ...(options.observedGeneration !== undefined ? { observedGeneration: options.observedGeneration } : {}),
      recordUid: deployment.uid,
      recordGeneration: deployment.generation,
    },
  };
}
