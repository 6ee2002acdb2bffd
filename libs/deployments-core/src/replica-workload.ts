import { OwnerLabels, type DeploymentRole, type ModelDeploymentSpec, type PodResources, type WorkloadSpec } from '@gpufleet/contracts';
import { replicaWorkloadName } from './names';
import { layerEnv } from './secrets';
import { templateHash } from './template-hash';
import { sizingArgs } from './memory-sizing';

/**
 * The workload that holds one replica's devices and carries what its pods run. One workload per
 * replica (not one per deployment): each replica is admitted, placed, replaced and moved on its
 * own, so scaling, rolling updates and recovery never disturb the other replicas.
 */
export function replicaWorkloadSpec(
  spec: ModelDeploymentSpec,
  role: DeploymentRole,
  ordinal: number,
  resources: PodResources,
  suffix: string,
  /** The pool of the role's InstanceType ('' for explicit resources): the default LocalQueue routes by it. */
  pool = '',
): WorkloadSpec {
  const engine = spec.engine!;
  return {
    name: replicaWorkloadName(spec.name, role.role, ordinal, suffix),
    namespace: spec.namespace,
    localQueue: spec.localQueue,
    priority: spec.priority,
    podSets: [{ name: role.role, count: 1, size: role.size || 1, resources, topology: role.topology }],
    labels: {
      ...spec.labels,
      [OwnerLabels.deployment]: spec.name,
      [OwnerLabels.role]: role.role,
      [OwnerLabels.ordinal]: String(ordinal),
    },
    template: {
      engine: {
        deployment: spec.name,
        role: role.role,
        ordinal,
        model: spec.model,
        servedModelName: spec.servedModelName,
        // The role's arguments and environment go after (and over) the deployment's; references
        // to Secrets stay references: the node runtime resolves them when it starts the pod.
        // Sizing flags first: a user's own extraArgs come later and win (the engines take the last).
        engine: { ...engine, extraArgs: [...sizingArgs(engine.engine, spec.sizing), ...engine.extraArgs, ...(role.extraArgs ?? [])], ...layerEnv({ env: engine.env, envFromSecret: engine.envFromSecret ?? {} }, role) },
        templateHash: templateHash(spec, role),
        artifact: spec.artifact ?? '',
        gpuMemoryUtilization: spec.sizing?.gpuMemoryUtilization ?? 0,
      },
      instance: undefined,
    },
    pool,
  };
}
