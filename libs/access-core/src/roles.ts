import { Role, type RoleBinding } from '@gpufleet/contracts';

/**
 * What one gRPC method needs of its caller, computed from the request (the namespace it names):
 * - `namespace`: `view` to read a namespace's objects, `edit` to change them; namespace '' is
 *   every namespace (a list or watch without a filter), which needs the role on `*`;
 * - `any-role`: cluster-wide information every principal with a role may read (nodes, pools,
 *   InstanceTypes, ClusterQueues: what an instance or deployment can ask for);
 * - `admin`: cluster-scoped objects (ClusterQueues, API keys, users);
 * - `authenticated`: any valid credential (WhoAmI).
 */
export type Need =
  | { readonly kind: 'namespace'; readonly verb: 'view' | 'edit'; readonly namespace: string }
  | { readonly kind: 'any-role' }
  | { readonly kind: 'admin' }
  | { readonly kind: 'authenticated' };

export const needs = {
  view: (namespace: string): Need => ({ kind: 'namespace', verb: 'view', namespace }),
  edit: (namespace: string): Need => ({ kind: 'namespace', verb: 'edit', namespace }),
  anyRole: { kind: 'any-role' } as Need,
  admin: { kind: 'admin' } as Need,
  authenticated: { kind: 'authenticated' } as Need,
} as const;

/** The namespace of a binding that covers every namespace. */
export const ALL_NAMESPACES = '*';

export const ROLE_NAMES: Readonly<Record<Role, string>> = {
  [Role.ROLE_UNSPECIFIED]: 'unspecified',
  [Role.ROLE_ADMIN]: 'admin',
  [Role.ROLE_EDIT]: 'edit',
  [Role.ROLE_VIEW]: 'view',
  [Role.UNRECOGNIZED]: 'unrecognized',
};

/** "edit in team-a", "view in every namespace", "admin". */
export function describeBinding(b: Pick<RoleBinding, 'role' | 'namespace'>): string {
  const role = ROLE_NAMES[b.role] ?? 'unrecognized';
  if (b.role === Role.ROLE_ADMIN) return role;
  return b.namespace === ALL_NAMESPACES ? `${role} in every namespace` : `${role} in ${b.namespace}`;
}

function covers(binding: Pick<RoleBinding, 'role' | 'namespace'>, verb: 'view' | 'edit', namespace: string): boolean {
  if (binding.role === Role.ROLE_ADMIN) return true;
  const roleOk = binding.role === Role.ROLE_EDIT || (verb === 'view' && binding.role === Role.ROLE_VIEW);
  return roleOk && (binding.namespace === ALL_NAMESPACES || (namespace !== '' && binding.namespace === namespace));
}

/** Whether bindings satisfy a need. */
export function allows(bindings: ReadonlyArray<Pick<RoleBinding, 'role' | 'namespace'>>, need: Need): boolean {
  switch (need.kind) {
    case 'authenticated':
      return true;
    case 'any-role':
      return bindings.some((b) => b.role === Role.ROLE_ADMIN || b.role === Role.ROLE_EDIT || b.role === Role.ROLE_VIEW);
    case 'admin':
      return bindings.some((b) => b.role === Role.ROLE_ADMIN);
    case 'namespace':
      return bindings.some((b) => covers(b, need.verb, need.namespace));
  }
}

/** What is missing, as the sentence of a PERMISSION_DENIED: which role the caller needs and which it has. */
export function missingRole(principal: string, bindings: ReadonlyArray<Pick<RoleBinding, 'role' | 'namespace'>>, need: Need, action: string): string {
  const has = bindings.length === 0 ? `${principal} has no role` : `${principal} has ${bindings.map(describeBinding).join(', ')}`;
  const grant = (role: string, ns: string) => `grant it with \`gpufleet users bind ${principal} --role ${role}${ns ? ` --namespace ${ns}` : ''}\``;
  switch (need.kind) {
    case 'authenticated':
      return `${action} needs an authenticated caller`;
    case 'any-role':
      return `${action} needs a role (view, edit or admin) in some namespace; ${has}; ${grant('view', '<namespace>')}`;
    case 'admin':
      return `${action} needs the admin role (it acts on cluster-scoped objects); ${has}`;
    case 'namespace':
      if (need.namespace === '') {
        return `${action} across every namespace needs ${need.verb} in every namespace (namespace "*") or admin; ${has}; name one namespace instead (-n/--namespace)`;
      }
      return `${action} needs ${need.verb} in namespace ${need.namespace} (or admin); ${has}; ${grant(need.verb, need.namespace)}`;
  }
}
