// Valid requests of the scheduler's API, for specs to spoil one field at a time.
import { ClusterQueue, GPUInstanceSpec, LocalQueue, ModelDeploymentSpec, WorkloadSpec } from '@gpufleet/contracts';

/** What a generated message's fromPartial takes. */
export type PartialOf<M extends { fromPartial(p: never): unknown }> = Parameters<M['fromPartial']>[0];

export function workload(overrides: object = {}): WorkloadSpec {
  return WorkloadSpec.fromPartial({
    namespace: 'default',
    name: 'w',
    localQueue: 'default',
    podSets: [{ name: 'main', count: 1, size: 1, resources: { accelerator: { whole: 1 }, vcpu: 2, memoryMib: 4096 } }],
    ...overrides,
  } as PartialOf<typeof WorkloadSpec>);
}

export function deployment(overrides: object = {}): ModelDeploymentSpec {
  return ModelDeploymentSpec.fromPartial({
    namespace: 'default',
    name: 'd',
    localQueue: 'default',
    model: '/models/m',
    engine: { engine: 'vllm' },
    roles: [{ role: 'server', replicas: 1, size: 1, resources: { accelerator: { whole: 1 }, vcpu: 2, memoryMib: 4096 } }],
    ...overrides,
  } as PartialOf<typeof ModelDeploymentSpec>);
}

export function instance(overrides: object = {}): GPUInstanceSpec {
  return GPUInstanceSpec.fromPartial({
    namespace: 'default',
    name: 'i',
    localQueue: 'default',
    resources: { accelerator: { whole: 1 }, vcpu: 2, memoryMib: 4096 },
    sshPublicKeys: ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG4rT3vTt99Ox5kndS4HmgTrKBT8SKzhK4rhGkEVGlCI test'],
    ...overrides,
  } as PartialOf<typeof GPUInstanceSpec>);
}

export function clusterQueue(pool: string, overrides: object = {}): ClusterQueue {
  return ClusterQueue.fromPartial({ name: 'cq', pool, nominalQuota: 8, ...overrides } as PartialOf<typeof ClusterQueue>);
}

export function localQueue(overrides: object = {}): LocalQueue {
  return LocalQueue.fromPartial({ namespace: 'default', name: 'lq', clusterQueue: 'cq', ...overrides } as PartialOf<typeof LocalQueue>);
}
