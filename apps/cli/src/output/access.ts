import { describeBinding } from '@gpufleet/access-core';
import { PrincipalKind, type AccessToken, type RoleBinding, type User } from '@gpufleet/contracts';
import { Column, age } from './format';

export function kindName(kind: PrincipalKind): string {
  if (kind === PrincipalKind.PRINCIPAL_KIND_SERVICE_ACCOUNT) return 'ServiceAccount';
  if (kind === PrincipalKind.PRINCIPAL_KIND_BOOTSTRAP) return 'BootstrapAdmin';
  return 'User';
}

/** "admin", "edit in team-a, view in every namespace", or "none". */
export function rolesSummary(bindings: readonly RoleBinding[]): string {
  return bindings.length === 0 ? 'none' : bindings.map(describeBinding).join(', ');
}

export function tokenStatus(t: AccessToken, now = Date.now()): 'Active' | 'Revoked' | 'Expired' {
  if (t.revoked) return 'Revoked';
  if (t.expiresAt && t.expiresAt.getTime() <= now) return 'Expired';
  return 'Active';
}

export function userColumns(rolesOf: (name: string) => RoleBinding[]): Column<User>[] {
  return [
    { header: 'NAME', value: (u) => u.name },
    { header: 'KIND', value: (u) => kindName(u.kind) },
    { header: 'ROLES', value: (u) => rolesSummary(rolesOf(u.name)) },
    { header: 'DESCRIPTION', value: (u) => u.description || '-', wideOnly: true },
    { header: 'AGE', value: (u) => age(u.createdAt) },
  ];
}

export const tokenColumns: Column<AccessToken>[] = [
  { header: 'ID', value: (t) => t.id },
  { header: 'PRINCIPAL', value: (t) => t.principal },
  { header: 'DESCRIPTION', value: (t) => t.description || '-' },
  { header: 'EXPIRES', value: (t) => (t.expiresAt ? t.expiresAt.toISOString().replace(/\.\d{3}Z$/, 'Z') : 'never') },
  { header: 'STATUS', value: (t) => tokenStatus(t) },
  { header: 'AGE', value: (t) => age(t.createdAt) },
];
