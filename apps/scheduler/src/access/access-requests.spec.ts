import { status } from '@grpc/grpc-js';
import { PrincipalKind, Role } from '@gpufleet/contracts';
import type { GrpcError } from '@gpufleet/grpc-kit';
import { checkBinding, checkDescription, checkLifetime, checkPrincipalName, checkTokenId, userKind } from './access-requests';

function problem(fn: () => unknown): { code: number; field?: string; message: string } {
  try {
    fn();
  } catch (err) {
    const e = err as GrpcError;
    return { code: e.code, field: e.field, message: e.message };
  }
  throw new Error('accepted');
}

describe('AccessService request validation', () => {
  it.each([
    ['name', ''],
    ['name', 'Alice'],
    ['name', '-alice'],
    ['name', 'alice-'],
    ['name', 'al..ice'],
    ['name', 'alice@example.com'],
    ['name', 'system:admin'],
    ['principal', 'x'.repeat(64)],
    ['principal', 'a b'],
  ])('refuses %s %j with INVALID_ARGUMENT naming the field', (field, name) => {
    const p = problem(() => checkPrincipalName(field, name));
    expect(p).toMatchObject({ code: status.INVALID_ARGUMENT, field });
    expect(p.message).toContain(`${field}: expected a name of 1-63 characters`);
  });

  it.each(['a', 'alice', 'alice.smith', 'ci_bot-2', 'x'.repeat(63)])('takes the name %j', (name) => {
    expect(() => checkPrincipalName('name', name)).not.toThrow();
  });

  it('cuts a huge name short in the error, so the error stays small', () => {
    expect(problem(() => checkPrincipalName('name', 'Y'.repeat(100_000))).message.length).toBeLessThan(300);
  });

  it.each([
    [Role.ROLE_ADMIN, 'team-a', 'namespace', 'empty for the admin role'],
    [Role.ROLE_EDIT, '', 'namespace', 'a namespace (a DNS-1123 label) or "*"'],
    [Role.ROLE_VIEW, 'Team_A', 'namespace', 'a namespace (a DNS-1123 label) or "*"'],
    [Role.ROLE_UNSPECIFIED, 'team-a', 'role', 'ROLE_ADMIN, ROLE_EDIT or ROLE_VIEW'],
    [Role.UNRECOGNIZED, 'team-a', 'role', 'ROLE_ADMIN, ROLE_EDIT or ROLE_VIEW'],
  ])('refuses the binding %s in %j (%s: %s)', (role, namespace, field, expected) => {
    const p = problem(() => checkBinding(role, namespace));
    expect(p).toMatchObject({ code: status.INVALID_ARGUMENT, field });
    expect(p.message).toContain(expected);
  });

  it.each([
    [Role.ROLE_ADMIN, ''],
    [Role.ROLE_EDIT, 'team-a'],
    [Role.ROLE_VIEW, '*'],
  ])('takes the binding %s in %j', (role, namespace) => {
    expect(() => checkBinding(role, namespace)).not.toThrow();
  });

  it.each([-1, 1.5, 10 * 365 * 24 * 3600 + 1, Number.MAX_SAFE_INTEGER + 2, Number.NaN])('refuses expires_in_seconds %d', (seconds) => {
    expect(problem(() => checkLifetime(seconds))).toMatchObject({ code: status.INVALID_ARGUMENT, field: 'expires_in_seconds' });
  });

  it('takes 0 (never) up to ten years', () => {
    expect(() => checkLifetime(0)).not.toThrow();
    expect(() => checkLifetime(10 * 365 * 24 * 3600)).not.toThrow();
  });

  it.each(['', 'ABCDEFGHIJKL', 'abc', `gfat_${'a'.repeat(12)}`])('refuses the token id %j', (id) => {
    expect(problem(() => checkTokenId(id))).toMatchObject({ code: status.INVALID_ARGUMENT, field: 'id' });
  });

  it('bounds descriptions and kinds', () => {
    expect(problem(() => checkDescription('d'.repeat(257)))).toMatchObject({ code: status.INVALID_ARGUMENT, field: 'description' });
    expect(userKind(PrincipalKind.PRINCIPAL_KIND_UNSPECIFIED)).toBe(PrincipalKind.PRINCIPAL_KIND_USER);
    expect(userKind(PrincipalKind.PRINCIPAL_KIND_SERVICE_ACCOUNT)).toBe(PrincipalKind.PRINCIPAL_KIND_SERVICE_ACCOUNT);
    expect(problem(() => userKind(PrincipalKind.PRINCIPAL_KIND_BOOTSTRAP))).toMatchObject({ code: status.INVALID_ARGUMENT, field: 'kind' });
  });
});
