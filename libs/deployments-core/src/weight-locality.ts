import type { WorkloadSpec } from '@gpufleet/contracts';

/** What weight locality reads of a node's copy (ArtifactNodeStatus). */
export interface CopyView {
  readonly node: string;
  readonly state: string;
}

/**
 * Nodes whose copy of the artifact a workload's engine loads is Ready, sorted by name: the nodes
 * its replicas try first. `copies` is the artifact-nodes bucket by key, "<node>.<namespace>.<name>".
 * Empty for a workload that names no artifact.
 */
export function nodesHoldingWeights(spec: Pick<WorkloadSpec, 'namespace' | 'template'>, copies: Iterable<[string, CopyView]>): string[] {
  const artifact = spec.template?.engine?.artifact;
  if (!artifact) return [];
  const suffix = `.${spec.namespace}.${artifact}`;
  const out: string[] = [];
  for (const [key, copy] of copies) {
    if (copy.state === 'Ready' && key === `${copy.node}${suffix}`) out.push(copy.node);
  }
  return out.sort();
}
