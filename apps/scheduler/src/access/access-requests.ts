/** Validation of AccessService requests: each problem is an INVALID_ARGUMENT naming the field. */
import { ALL_NAMESPACES, MAX_DESCRIPTION, MAX_TOKEN_LIFETIME_S, NAMESPACE_NAME, PRINCIPAL_NAME, CREDENTIAL_ID_PATTERN } from '@gpufleet/access-core';
import { PrincipalKind, Role } from '@gpufleet/contracts';
import { invalidArgument } from '@gpufleet/grpc-kit';

export function checkPrincipalName(field: string, name: string): void {
  if (!PRINCIPAL_NAME.test(name) || name.includes('..')) {
    throw invalidArgument(field, 'a name of 1-63 characters: a-z, 0-9, ".", "_" and "-", a letter or digit at both ends, no ".."', name.length > 80 ? `${name.slice(0, 80)}…` : name);
  }
}

export function checkDescription(description: string): void {
  if (description.length > MAX_DESCRIPTION) throw invalidArgument('description', `at most ${MAX_DESCRIPTION} characters`, `${description.length} characters`);
}

/** USER when unspecified; the bootstrap kind is never stored. */
export function userKind(kind: PrincipalKind): PrincipalKind {
  if (kind === PrincipalKind.PRINCIPAL_KIND_UNSPECIFIED) return PrincipalKind.PRINCIPAL_KIND_USER;
  if (kind === PrincipalKind.PRINCIPAL_KIND_USER || kind === PrincipalKind.PRINCIPAL_KIND_SERVICE_ACCOUNT) return kind;
  throw invalidArgument('kind', 'PRINCIPAL_KIND_USER or PRINCIPAL_KIND_SERVICE_ACCOUNT', kind);
}

export function checkLifetime(seconds: number): void {
  if (!Number.isSafeInteger(seconds) || seconds < 0 || seconds > MAX_TOKEN_LIFETIME_S) {
    throw invalidArgument('expires_in_seconds', `a whole number of seconds 0-${MAX_TOKEN_LIFETIME_S} (10 years; 0: never expires)`, seconds);
  }
}

export function checkTokenId(id: string): void {
  if (!CREDENTIAL_ID_PATTERN.test(id)) throw invalidArgument('id', 'a token id of 12 lower-case letters and digits (the part after gfat_)', id.length > 40 ? `${id.slice(0, 40)}…` : id);
}

/** admin is cluster-wide (namespace empty); edit and view name a namespace or "*". */
export function checkBinding(role: Role, namespace: string): void {
  if (role === Role.ROLE_ADMIN) {
    if (namespace !== '') throw invalidArgument('namespace', 'empty for the admin role (it is cluster-wide)', namespace);
    return;
  }
  if (role !== Role.ROLE_EDIT && role !== Role.ROLE_VIEW) throw invalidArgument('role', 'ROLE_ADMIN, ROLE_EDIT or ROLE_VIEW', role);
  if (namespace !== ALL_NAMESPACES && !NAMESPACE_NAME.test(namespace)) {
    throw invalidArgument('namespace', 'a namespace (a DNS-1123 label) or "*" for every namespace', namespace);
  }
}
