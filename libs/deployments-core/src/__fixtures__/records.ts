import {
  ModelDeployment,
  ModelDeploymentSpec,
  PodRuntimeStatus,
  Workload,
  WorkloadPhase,
  type WorkloadSpec,
} from '@gpufleet/contracts';
import type { DeploymentValidationContext } from '../deployment-spec';

export const H100_POOL = 'h100-80gb-hbm3-x86-64';

/** A cluster with the dev fleet's H100 InstanceTypes and one LocalQueue per team. */
export const context: DeploymentValidationContext = {
  resolveLocalQueue: (namespace, localQueue) =>
    namespace === 'team-a' && localQueue === 'default' ? { ok: true, pool: H100_POOL } : { ok: false, expected: `a LocalQueue of namespace "${namespace}"` },
  resolveInstanceType: (name) => {
    const m = new RegExp(`^(${H100_POOL}|l40s-x86-64)\\.(\\d+)x$`).exec(name);
    if (!m) return undefined;
    const n = Number(m[2]);
    return { pool: m[1], resources: { accelerator: { whole: n }, vcpu: 16 * n, memoryMib: 131_072 * n }, acceleratorMemoryMib: 81_559 };
  },
};

export function deploymentSpec(overrides: Partial<ModelDeploymentSpec> = {}): ModelDeploymentSpec {
  return ModelDeploymentSpec.fromPartial({
    name: 'llama',
    namespace: 'team-a',
    localQueue: 'default',
    model: '/models/llama-3.1-8b',
    servedModelName: 'llama-3.1-8b',
    engine: { engine: 'vllm', mode: 'throughput' },
    roles: [{ role: 'server', replicas: 2, size: 1, instanceType: `${H100_POOL}.1x` }],
    ...overrides,
  });
}

export function deployment(spec = deploymentSpec(), extra: Partial<ModelDeployment> = {}): ModelDeployment {
  return ModelDeployment.fromPartial({ spec, generation: 1, createdAt: new Date(0), ...extra });
}

/** A workload as the admission controller leaves it: admitted on `node`, or pending. */
export function admitted(spec: WorkloadSpec, node: string, acceleratorIds: string[] = ['nvidia-0'], submittedAt = new Date(1_000)): Workload {
  return Workload.fromPartial({
    spec,
    status: {
      phase: WorkloadPhase.WORKLOAD_PHASE_ADMITTED,
      submittedAt,
      placements: [{ podSet: spec.podSets[0].name, replica: 0, pod: 0, node, acceleratorIds }],
    },
  });
}

export function pending(spec: WorkloadSpec): Workload {
  return Workload.fromPartial({ spec, status: { phase: WorkloadPhase.WORKLOAD_PHASE_PENDING, submittedAt: new Date(1_000) } });
}

export function pod(w: Workload, state: string, port = 41_000, extra: Partial<PodRuntimeStatus> = {}): PodRuntimeStatus {
  return PodRuntimeStatus.fromPartial({
    node: w.status?.placements[0]?.node ?? '',
    namespace: w.spec!.namespace,
    workload: w.spec!.name,
    podSet: w.spec!.podSets[0].name,
    replica: 0,
    pod: 0,
    state,
    host: '127.0.0.1',
    port,
    runtimeUrl: 'http://127.0.0.1:9100',
    ...extra,
  });
}
