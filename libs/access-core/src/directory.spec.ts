import { hashSecret } from './credential';
import { ACCESS_TOKENS, BOOTSTRAP_ADMIN } from './access-token';
import { AccessDirectory, AccessError, bindingKey } from './directory';
import { needs } from './roles';
import { PrincipalKind, Role, type AccessTokenRecord, type RoleBinding, type User } from '@gpufleet/contracts';

const ADMIN_TOKEN = 'bootstrap-admin-token-0123456789abcdef';
let revision = 0;

function user(name: string): User {
  return { name, kind: PrincipalKind.PRINCIPAL_KIND_USER, description: '', createdAt: new Date() };
}

function binding(principal: string, role: Role, namespace: string): RoleBinding {
  return { principal, role, namespace, createdAt: new Date() };
}

/** A directory with alice (edit team-a), bob (view team-a), ci (view in every namespace), root (admin) and nobody (no role). */
function directory(): { d: AccessDirectory; tokens: Record<string, string> } {
  const d = new AccessDirectory(ADMIN_TOKEN);
  const tokens: Record<string, string> = {};
  for (const [name, role, ns] of [
    ['alice', Role.ROLE_EDIT, 'team-a'],
    ['bob', Role.ROLE_VIEW, 'team-a'],
    ['ci', Role.ROLE_VIEW, '*'],
    ['root', Role.ROLE_ADMIN, ''],
    ['nobody', undefined, ''],
  ] as const) {
    d.applyUser({ kind: 'put', key: name, value: user(name), revision: ++revision });
    if (role) {
      const b = binding(name, role, ns);
      d.applyBinding({ kind: 'put', key: bindingKey(b), value: b, revision: ++revision });
    }
    const t = ACCESS_TOKENS.generate();
    const record: AccessTokenRecord = { token: { id: t.id, principal: name, description: '', createdAt: new Date(), expiresAt: undefined, revoked: false, revokedAt: undefined }, secretHash: hashSecret(t.secret) };
    d.applyToken({ kind: 'put', key: t.id, value: record, revision: ++revision });
    tokens[name] = t.key;
  }
  d.markReady();
  return { d, tokens };
}

function refusal(fn: () => unknown): AccessError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AccessError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('AccessDirectory.authenticate', () => {
  it('knows the bootstrap admin token as system:admin with the admin role', () => {
    const { d } = directory();
    const p = d.authenticate(`Bearer ${ADMIN_TOKEN}`, Date.now());
    expect(p).toMatchObject({ name: BOOTSTRAP_ADMIN, kind: PrincipalKind.PRINCIPAL_KIND_BOOTSTRAP });
    expect(p.tokenId).toBeUndefined();
    expect(() => d.authorize(p, needs.admin, 'PutClusterQueue')).not.toThrow();
  });

  it('resolves an access token to its user, token id and bindings', () => {
    const { d, tokens } = directory();
    const p = d.authenticate(`Bearer ${tokens.alice}`, Date.now());
    expect(p.name).toBe('alice');
    expect(p.tokenId).toBe(ACCESS_TOKENS.parse(tokens.alice).id);
    expect(p.bindings.map((b) => [b.role, b.namespace])).toEqual([[Role.ROLE_EDIT, 'team-a']]);
  });

  it.each([
    [undefined, 'this API needs "authorization: Bearer <token>"'],
    ['Basic dXNlcjpwYXNz', 'this API needs "authorization: Bearer <token>"'],
    ['Bearer not-the-admin-token', 'neither an access token (gfat_…) nor the admin token'],
    ['Bearer gfat_short', 'access token id is not 12 lower-case letters'],
    [`Bearer gfat_abcdefghijkl_${'x'.repeat(43)}`, 'access token abcdefghijkl: no such token, or the secret does not match'],
  ])('refuses %j as UNAUTHENTICATED: %s', (header, sentence) => {
    const { d } = directory();
    const err = refusal(() => d.authenticate(header, Date.now()));
    expect(err.failure).toBe('UNAUTHENTICATED');
    expect(err.sentence).toContain(sentence);
  });

  it('refuses a wrong secret for a real id, a revoked token, an expired one and one whose user is gone, and never repeats a secret', () => {
    const { d, tokens } = directory();
    const { id, secret } = ACCESS_TOKENS.parse(tokens.alice);
    const flipped = ACCESS_TOKENS.format(id, secret.slice(0, -1) + (secret.endsWith('A') ? 'B' : 'A'));
    expect(refusal(() => d.authenticate(`Bearer ${flipped}`, Date.now())).sentence).toContain('the secret does not match');

    const record = d.token(id)!;
    d.applyToken({ kind: 'put', key: id, value: { ...record, token: { ...record.token!, revoked: true } }, revision: ++revision });
    const revoked = refusal(() => d.authenticate(`Bearer ${tokens.alice}`, Date.now()));
    expect(revoked.sentence).toBe(`access token ${id} has been revoked; ask an admin for a new one`);
    expect(revoked.message).not.toContain(secret);

    const bob = ACCESS_TOKENS.parse(tokens.bob).id;
    const bobRecord = d.token(bob)!;
    d.applyToken({ kind: 'put', key: bob, value: { ...bobRecord, token: { ...bobRecord.token!, expiresAt: new Date(1_000) } }, revision: ++revision });
    expect(refusal(() => d.authenticate(`Bearer ${tokens.bob}`, 2_000)).sentence).toContain('expired at 1970-01-01T00:00:01.000Z');

    d.applyUser({ kind: 'delete', key: 'ci', revision: ++revision });
    expect(refusal(() => d.authenticate(`Bearer ${tokens.ci}`, Date.now())).sentence).toContain('belongs to ci, which no longer exists');
  });

  it('answers UNAVAILABLE for access tokens until the buckets are loaded; the bootstrap admin works at once', () => {
    const d = new AccessDirectory(ADMIN_TOKEN);
    expect(refusal(() => d.authenticate(`Bearer gfat_abcdefghijkl_${'x'.repeat(43)}`, Date.now())).failure).toBe('UNAVAILABLE');
    expect(d.authenticate(`Bearer ${ADMIN_TOKEN}`, Date.now()).name).toBe(BOOTSTRAP_ADMIN);
  });

  it('does not trust a record stored under another key than its own, and ignores changes older than what it has', () => {
    const { d, tokens } = directory();
    const id = ACCESS_TOKENS.parse(tokens.alice).id;
    const record = d.token(id)!;
    d.applyToken({ kind: 'put', key: 'zzzzzzzzzzzz', value: record, revision: ++revision });
    expect(d.token('zzzzzzzzzzzz')).toBeUndefined();
    d.applyToken({ kind: 'delete', key: id, revision: 1 }); // older than the put: ignored
    expect(d.token(id)).toBeDefined();
    const mallory = binding('mallory', Role.ROLE_ADMIN, '');
    d.applyBinding({ kind: 'put', key: 'alice.edit.team-a', value: mallory, revision: ++revision });
    expect(d.bindingsOf('mallory')).toEqual([]);
  });

  it('is open (not enforced) without a bootstrap token', () => {
    expect(new AccessDirectory(undefined).enforced).toBe(false);
    expect(new AccessDirectory(ADMIN_TOKEN).enforced).toBe(true);
  });
});

describe('AccessDirectory.authorize', () => {
  const cases: Array<[string, ReturnType<typeof needs.view>, boolean]> = [
    ['alice', needs.edit('team-a'), true],
    ['alice', needs.view('team-a'), true],
    ['alice', needs.edit('team-b'), false],
    ['alice', needs.view(''), false],
    ['alice', needs.admin, false],
    ['alice', needs.anyRole, true],
    ['bob', needs.view('team-a'), true],
    ['bob', needs.edit('team-a'), false],
    ['ci', needs.view('team-z'), true],
    ['ci', needs.view(''), true],
    ['ci', needs.edit('team-z'), false],
    ['root', needs.edit('anything'), true],
    ['root', needs.edit(''), true],
    ['root', needs.admin, true],
    ['nobody', needs.anyRole, false],
    ['nobody', needs.authenticated, true],
  ];
  it.each(cases)('%s with %j: allowed %s', (name, need, allowed) => {
    const { d, tokens } = directory();
    const p = d.authenticate(`Bearer ${tokens[name]}`, Date.now());
    if (allowed) expect(() => d.authorize(p, need, 'Call')).not.toThrow();
    else expect(refusal(() => d.authorize(p, need, 'Call')).failure).toBe('PERMISSION_DENIED');
  });

  it('says which role is missing, which the caller has, and how to grant it', () => {
    const { d, tokens } = directory();
    const bob = d.authenticate(`Bearer ${tokens.bob}`, Date.now());
    expect(refusal(() => d.authorize(bob, needs.edit('team-a'), 'CreateDeployment')).sentence).toBe(
      'CreateDeployment needs edit in namespace team-a (or admin); bob has view in team-a; grant it with `gpufleet users bind bob --role edit --namespace team-a`',
    );
    expect(refusal(() => d.authorize(bob, needs.view(''), 'ListDeployments')).sentence).toContain('ListDeployments across every namespace needs view in every namespace (namespace "*") or admin');
    expect(refusal(() => d.authorize(bob, needs.admin, 'PutClusterQueue')).sentence).toBe('PutClusterQueue needs the admin role (it acts on cluster-scoped objects); bob has view in team-a');
    const nobody = d.authenticate(`Bearer ${tokens.nobody}`, Date.now());
    expect(refusal(() => d.authorize(nobody, needs.anyRole, 'ListNodes')).sentence).toContain('nobody has no role');
  });

  it('drops a binding on delete, and a binding moved to another key is filed once', () => {
    const { d, tokens } = directory();
    d.applyBinding({ kind: 'delete', key: 'alice.edit.team-a', revision: ++revision });
    const alice = d.authenticate(`Bearer ${tokens.alice}`, Date.now());
    expect(alice.bindings).toEqual([]);
    expect(d.allBindings().map(bindingKey).sort()).toEqual(['bob.view.team-a', 'ci.view.all', 'root.admin._']);
  });
});
