import { InstanceType, InstanceTypeCapacity, UnitSpec } from '@gpufleet/contracts';
import { problem, shown, type ValidationProblem } from '@gpufleet/scheduling-core';
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { checkEnvelope, converted, GPUFLEET_GROUP, GPUFLEET_VERSION, type Converted, type CustomResource } from './resource';
import { checkShape, object, str, uint32, uint64 } from './shape';

/**
 * InstanceTypes are derived by the scheduler from its pools (CapacityService has no call that
 * writes one), so the resource is a read-only mirror: cluster-scoped, named like the
 * InstanceType (`h100-80gb-hbm3-x86-64.4x`, a DNS-1123 subdomain), written by gpufleet.
 */
export const INSTANCE_TYPE_SPEC_SHAPE = object({
  pool: str,
  acceleratorProduct: str,
  unit: object({ accelerators: uint32, vcpu: uint32, memoryMib: uint64, localStorageGib: uint64, acceleratorMemoryMib: uint64 }),
  creditPrice: uint64,
});

export interface InstanceTypeResourceSpec {
  pool: string;
  acceleratorProduct: string;
  unit: Record<string, unknown>;
  creditPrice: number;
}

export interface InstanceTypeResourceStatus {
  capacity: Record<string, unknown>;
  readyNodes: number;
  revision: number;
}

export type InstanceTypeResource = CustomResource<'InstanceType', InstanceTypeResourceSpec, InstanceTypeResourceStatus>;

const DNS_1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** The resource as the gRPC InstanceType (spec and status together), every problem naming its field. */
export function instanceTypeOf(resource: InstanceTypeResource): Converted<InstanceType> {
  const problems: ValidationProblem[] = [...checkEnvelope(resource, 'InstanceType', false), ...checkShape(INSTANCE_TYPE_SPEC_SHAPE, resource.spec, 'spec')];
  const name = resource.metadata?.name ?? '';
  if (name && (name.length > 253 || !DNS_1123_SUBDOMAIN.test(name))) problems.push(problem('metadata.name', 'a DNS-1123 subdomain (an InstanceType name such as "h100-80gb-hbm3-x86-64.4x")', shown(name)));
  if (resource.metadata?.namespace) problems.push(problem('metadata.namespace', 'none (InstanceType is cluster-scoped)', shown(resource.metadata.namespace)));
  if (problems.length === 0 && !resource.spec.pool) problems.push(problem('spec.pool', 'the pool the InstanceType belongs to', 'none'));
  if (problems.length > 0) return converted(InstanceType.fromPartial({}), problems);
  return converted(
    InstanceType.fromJSON({ ...resource.spec, name, capacity: resource.status?.capacity, readyNodes: resource.status?.readyNodes, revision: resource.status?.revision }),
    [],
  );
}

export function instanceTypeResourceOf(instanceType: InstanceType, metadata: V1ObjectMeta = {}): InstanceTypeResource {
  return {
    apiVersion: `${GPUFLEET_GROUP}/${GPUFLEET_VERSION}`,
    kind: 'InstanceType',
    metadata: { ...metadata, name: instanceType.name },
    spec: {
      pool: instanceType.pool,
      acceleratorProduct: instanceType.acceleratorProduct,
      unit: UnitSpec.toJSON(instanceType.unit ?? UnitSpec.fromPartial({})) as Record<string, unknown>,
      creditPrice: instanceType.creditPrice,
    },
    status: {
      capacity: InstanceTypeCapacity.toJSON(instanceType.capacity ?? InstanceTypeCapacity.fromPartial({})) as Record<string, unknown>,
      readyNodes: instanceType.readyNodes,
      revision: instanceType.revision,
    },
  };
}
