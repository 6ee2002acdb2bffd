import type { WorkloadKey } from '../placer';

/**
 * How a node keeps tenants (namespaces) apart.
 * - `shared`: its runtime sandboxes every pod (or the admin allowed sharing it): any namespace's
 *   pods may run side by side.
 * - `exclusive`: its pods run unconfined, as one OS user that sees every process and file of the
 *   others, so it takes one namespace's pods at a time.
 */
export type NodeTenancy = 'shared' | 'exclusive';

/** The namespace part of a workload key ("<namespace>/<name>"). */
export function namespaceOfKey(key: WorkloadKey): string {
  const slash = key.indexOf('/');
  return slash < 0 ? key : key.slice(0, slash);
}

/** The namespaces other than `namespace` holding something on a node, sorted. */
export function otherTenants(holders: Iterable<WorkloadKey>, namespace: string): string[] {
  const others = new Set<string>();
  for (const key of holders) {
    const ns = namespaceOfKey(key);
    if (ns !== namespace) others.add(ns);
  }
  return [...others].sort();
}

/** One node left out of a placement for its tenants, as a message names it. */
export interface FencedNode {
  readonly node: string;
  readonly tenants: readonly string[];
}

/** The clause a placement failure gets when nodes were left out for their tenants. */
export function fencedClause(fenced: readonly FencedNode[], namespace: string): string {
  const shown = fenced
    .slice(0, 3)
    .map((f) => `${f.node} (${f.tenants.join(', ')})`)
    .join(', ');
  const more = fenced.length > 3 ? ` and ${fenced.length - 3} more` : '';
  const verb = fenced.length === 1 ? 'runs' : 'run';
  return (
    `${fenced.length} node${fenced.length === 1 ? '' : 's'} ${verb} pods unconfined (no sandbox) and hold${fenced.length === 1 ? 's' : ''} ` +
    `another namespace's pods, so ${fenced.length === 1 ? 'it takes' : 'they take'} none of namespace ${namespace}'s: ${shown}${more}; ` +
    `sandbox ${fenced.length === 1 ? 'its' : 'their'} pods, or let namespaces share ${fenced.length === 1 ? 'it' : 'them'} with SANDBOX_ALLOW_SHARING=true on the node runtime`
  );
}
