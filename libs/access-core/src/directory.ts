import { PrincipalKind, Role, type AccessTokenRecord, type RoleBinding, type User } from '@gpufleet/contracts';
import { timingSafeEqual, createHash } from 'crypto';
import { ACCESS_TOKEN_PREFIX, ACCESS_TOKENS, BOOTSTRAP_ADMIN } from './access-token';
import { CredentialFormatError } from './credential';
import { allows, missingRole, type Need } from './roles';

/** One change of an access bucket (the shape of @gpufleet/messaging's KvChange). */
export type AccessChange<T> = { kind: 'put'; key: string; value: T; revision: number } | { kind: 'delete'; key: string; revision: number };

/** Who a call runs as. */
export interface Principal {
  readonly name: string;
  readonly kind: PrincipalKind;
  /** The token presented; undefined for the bootstrap admin token. */
  readonly tokenId?: string;
  readonly bindings: readonly RoleBinding[];
}

export type AccessFailure = 'UNAUTHENTICATED' | 'PERMISSION_DENIED' | 'UNAVAILABLE';

/** A refused call: the gRPC status to answer and a sentence that never repeats a credential. */
export class AccessError extends Error {
  override readonly name = 'AccessError';

  constructor(
    readonly failure: AccessFailure,
    readonly sentence: string,
  ) {
    super(`${failure}: ${sentence}`);
  }
}

const BEARER = /^Bearer\s+(.+)$/;

function sha256(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

/**
 * Users, tokens and bindings in memory, fed by watches of the three access buckets, so every
 * call is authenticated without a network round trip and a revocation reaches every replica
 * within a watch's latency. GPUFLEET_ADMIN_TOKEN, when given, is the bootstrap admin
 * (`system:admin`), which exists before any user does.
 */
export class AccessDirectory {
  private readonly users = new Map<string, User>();
  private readonly tokens = new Map<string, AccessTokenRecord>();
  /** principal → binding key → binding. */
  private readonly bindings = new Map<string, Map<string, RoleBinding>>();
  private readonly revisions = new Map<string, number>();
  private readonly bootstrapDigest: Buffer | undefined;
  private loaded = false;
  private readonly listeners = new Set<() => void>();

  constructor(bootstrapToken: string | undefined) {
    this.bootstrapDigest = bootstrapToken ? sha256(bootstrapToken) : undefined;
  }

  /** Whether calls are checked at all: a stack without GPUFLEET_ADMIN_TOKEN (`up --no-auth`) is open. */
  get enforced(): boolean {
    return this.bootstrapDigest !== undefined;
  }

  /** True once the buckets' content at start is applied: before, access tokens get UNAVAILABLE (the bootstrap admin works at once). */
  get ready(): boolean {
    return this.loaded;
  }

  markReady(): void {
    this.loaded = true;
  }

  /** Called after every change a bucket brings (so open watches can be checked again); returns the function that removes it. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed(): void {
    for (const listener of [...this.listeners]) listener();
  }

  applyUser(change: AccessChange<User>): void {
    if (!this.fresh('user', change)) return;
    if (change.kind === 'delete') this.users.delete(change.key);
    else if (change.value.name === change.key) this.users.set(change.key, change.value);
    else this.users.delete(change.key); // a record stored under another name is not trusted
    this.changed();
  }

  applyToken(change: AccessChange<AccessTokenRecord>): void {
    if (!this.fresh('token', change)) return;
    if (change.kind === 'delete' || change.value.token?.id !== change.key) this.tokens.delete(change.key);
    else this.tokens.set(change.key, change.value);
    this.changed();
  }

  applyBinding(change: AccessChange<RoleBinding>): void {
    if (!this.fresh('binding', change)) return;
    for (const [principal, of] of this.bindings) {
      if (of.delete(change.key) && of.size === 0) this.bindings.delete(principal);
    }
    if (change.kind !== 'delete' && bindingKey(change.value) === change.key) {
      const of = this.bindings.get(change.value.principal) ?? new Map<string, RoleBinding>();
      of.set(change.key, change.value);
      this.bindings.set(change.value.principal, of);
    }
    this.changed();
  }

  user(name: string): User | undefined {
    return this.users.get(name);
  }

  allUsers(): User[] {
    return [...this.users.values()];
  }

  token(id: string): AccessTokenRecord | undefined {
    return this.tokens.get(id);
  }

  allTokens(): AccessTokenRecord[] {
    return [...this.tokens.values()];
  }

  /** A principal's bindings, the bootstrap admin's included. */
  bindingsOf(principal: string): RoleBinding[] {
    if (principal === BOOTSTRAP_ADMIN) return [{ principal, role: Role.ROLE_ADMIN, namespace: '', createdAt: undefined }];
    return [...(this.bindings.get(principal)?.values() ?? [])];
  }

  allBindings(): RoleBinding[] {
    return [...this.bindings.values()].flatMap((of) => [...of.values()]);
  }

  /** The principal of an `authorization` header value; throws UNAUTHENTICATED with the reason. */
  authenticate(header: string | undefined, now: number): Principal {
    const presented = header ? BEARER.exec(header.trim())?.[1]?.trim() : undefined;
    if (!presented) throw new AccessError('UNAUTHENTICATED', 'this API needs "authorization: Bearer <token>": an access token (gfat_…, from `gpufleet users token create`) or the admin token (GPUFLEET_ADMIN_TOKEN)');
    if (!presented.startsWith(ACCESS_TOKEN_PREFIX)) {
      if (this.bootstrapDigest && timingSafeEqual(sha256(presented), this.bootstrapDigest)) {
        return { name: BOOTSTRAP_ADMIN, kind: PrincipalKind.PRINCIPAL_KIND_BOOTSTRAP, bindings: this.bindingsOf(BOOTSTRAP_ADMIN) };
      }
      throw new AccessError('UNAUTHENTICATED', 'the token presented is neither an access token (gfat_…) nor the admin token (GPUFLEET_ADMIN_TOKEN)');
    }
    if (!this.loaded) throw new AccessError('UNAVAILABLE', 'the access directory is still loading (users, tokens, bindings); retry in a moment');
    let id: string;
    try {
      id = ACCESS_TOKENS.parse(presented).id;
    } catch (err) {
      if (err instanceof CredentialFormatError) throw new AccessError('UNAUTHENTICATED', err.message.replace(/^UNAUTHENTICATED: /, ''));
      throw err;
    }
    const record = this.tokens.get(id);
    if (!record || !ACCESS_TOKENS.verify(presented, record.secretHash)) {
      throw new AccessError('UNAUTHENTICATED', `access token ${id}: no such token, or the secret does not match`);
    }
    const token = record.token!;
    if (token.revoked) throw new AccessError('UNAUTHENTICATED', `access token ${id} has been revoked; ask an admin for a new one`);
    if (token.expiresAt && now >= token.expiresAt.getTime()) {
      throw new AccessError('UNAUTHENTICATED', `access token ${id} expired at ${token.expiresAt.toISOString()}; ask an admin for a new one`);
    }
    const user = this.users.get(token.principal);
    if (!user) throw new AccessError('UNAUTHENTICATED', `access token ${id} belongs to ${token.principal}, which no longer exists`);
    return { name: user.name, kind: user.kind, tokenId: id, bindings: this.bindingsOf(user.name) };
  }

  /** Throws PERMISSION_DENIED naming the missing role unless the principal's bindings satisfy `need`. */
  authorize(principal: Principal, need: Need, action: string): void {
    if (!allows(principal.bindings, need)) throw new AccessError('PERMISSION_DENIED', missingRole(principal.name, principal.bindings, need, action));
  }

  /** Revisions per bucket key, so a change applied early (by the writer itself) is not undone by an older one. */
  private fresh(bucket: string, change: AccessChange<unknown>): boolean {
    const key = `${bucket}:${change.key}`;
    if ((this.revisions.get(key) ?? 0) >= change.revision) return false;
    this.revisions.set(key, change.revision);
    return true;
  }
}

/** The key of a binding in the access-bindings bucket: "<principal>.<role>.<namespace>" ("_" for admin's empty namespace, "all" for "*"). */
export function bindingKey(b: Pick<RoleBinding, 'principal' | 'role' | 'namespace'>): string {
  const ns = b.namespace === '' ? '_' : b.namespace === '*' ? 'all' : b.namespace;
  return `${b.principal}.${b.role.replace(/^ROLE_/, '').toLowerCase()}.${ns}`;
}
