import type { DeploymentValidationContext } from '@gpufleet/deployments-core';
import type { ValidationProblem } from '@gpufleet/scheduling-core';

/**
 * A validation context that knows nothing of the cluster: every LocalQueue admits and no
 * InstanceType is known. Used when a conversion has no context (an admission webhook without
 * the scheduler's state): the problems that need the cluster are left to the gRPC call, which
 * checks them again.
 */
export const OFFLINE_CONTEXT: DeploymentValidationContext = {
  resolveLocalQueue: (_namespace, _queue, pool) => ({ ok: true, pool: pool ?? '' }),
  resolveInstanceType: () => undefined,
};

/** Whether a problem is one only the cluster can decide (an InstanceType's existence). */
export function needsCluster(p: ValidationProblem): boolean {
  return p.expected.startsWith('an InstanceType of the cluster');
}
