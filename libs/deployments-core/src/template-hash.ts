import { createHash } from 'crypto';
import type { DeploymentRole, ModelDeploymentSpec } from '@gpufleet/contracts';

/** JSON with object keys sorted, so equal values hash equally whatever order maps were built in. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * What a replica of `role` runs: the model, the engine configuration and the role's resources,
 * arguments and environment. Replica counts, priority and labels are left out: changing them
 * does not restart anything.
 */
export function templateHash(spec: ModelDeploymentSpec, role: DeploymentRole): string {
  // References to Secrets count (a new reference restarts replicas); empty maps are left out so
  // that deployments written before env_from_secret existed keep their hashes.
  // The artifact is left out when unset, so deployments written before it existed keep their hashes.
  const template = {
    model: spec.model,
    artifact: spec.artifact || undefined,
    // Unset for deployments written before sizing existed, which keep their hashes.
    sizing: spec.sizing,
    servedModelName: spec.servedModelName,
    engine: spec.engine && { ...spec.engine, envFromSecret: nonEmpty(spec.engine.envFromSecret) },
    role: {
      role: role.role,
      size: role.size,
      instanceType: role.instanceType,
      resources: role.resources,
      topology: role.topology,
      extraArgs: role.extraArgs,
      env: role.env,
      envFromSecret: nonEmpty(role.envFromSecret),
    },
  };
  return createHash('sha256').update(canonical(template)).digest('hex').slice(0, 16);
}

function nonEmpty<T extends object>(map: T | undefined): T | undefined {
  return map && Object.keys(map).length > 0 ? map : undefined;
}

/** One hash for the whole spec's templates (shown in status; changes when any role's does). */
export function deploymentTemplateHash(spec: ModelDeploymentSpec): string {
  return createHash('sha256')
    .update(spec.roles.map((r) => templateHash(spec, r)).join(','))
    .digest('hex')
    .slice(0, 16);
}
