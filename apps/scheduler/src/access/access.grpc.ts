import { Injectable } from '@nestjs/common';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { ACCESS_TOKENS, bindingKey, hashSecret } from '@gpufleet/access-core';
import { PrincipalKind, type AccessServiceServer, type AccessToken, type AccessTokenRecord, type RoleBinding, type User } from '@gpufleet/contracts';
import { callerOf, GrpcError, notFound, paginate, unary } from '@gpufleet/grpc-kit';
import { RevisionConflictError, type KvMirror } from '@gpufleet/messaging';
import { checkBinding, checkDescription, checkLifetime, checkPrincipalName, checkTokenId, userKind } from './access-requests';
import { AccessStore } from './access-store.service';

const DEFAULT_PAGE = 500;

function newestFirst(a: AccessToken, b: AccessToken): number {
  return (b.createdAt?.getTime() ?? 0) - (a.createdAt?.getTime() ?? 0) || a.id.localeCompare(b.id);
}

function byBindingKey(a: RoleBinding, b: RoleBinding): number {
  const ka = bindingKey(a);
  const kb = bindingKey(b);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/**
 * AccessService: users, service accounts, their tokens and role bindings, in the three access
 * buckets. Each write is applied to this replica's directory at once (the next call sees it);
 * other replicas and the router follow by watch. Who may call what is in access-rules.ts.
 */
@Injectable()
export class AccessGrpc {
  constructor(private readonly access: AccessStore) {}

  private get directory() {
    return this.access.directory;
  }

  private requireUser(name: string, field = 'principal'): User {
    checkPrincipalName(field, name);
    const user = this.directory.user(name);
    if (!user) throw notFound('user', name, 'list them with `gpufleet users list`');
    return user;
  }

  private tokensOf(principal: string): AccessToken[] {
    return this.directory
      .allTokens()
      .map((r) => r.token!)
      .filter((t) => principal === '' || t.principal === principal)
      .sort(newestFirst);
  }

  /** Writes through a mirror's store and applies the write to this replica's directory at once. */
  private async put<T>(mirror: KvMirror<T>, key: string, value: T, apply: (change: { kind: 'put'; key: string; value: T; revision: number }) => void, mustBeNew: boolean): Promise<void> {
    const revision = mustBeNew ? await mirror.store.create(key, value) : await mirror.store.put(key, value);
    apply({ kind: 'put', key, value, revision });
  }

  private async remove<T>(mirror: KvMirror<T>, key: string, apply: (change: { kind: 'delete'; key: string; revision: number }) => void): Promise<void> {
    await mirror.store.delete(key);
    // A delete is a new revision of the key; the mirror's own copy catches up by watch.
    apply({ kind: 'delete', key, revision: (mirror.get(key)?.revision ?? 0) + 1 });
  }

  readonly implementation: AccessServiceServer = {
    whoAmI: unary((_request, call) => {
      const caller = callerOf(call);
      if (!caller) return { principal: 'anonymous', kind: PrincipalKind.PRINCIPAL_KIND_UNSPECIFIED, tokenId: '', bindings: [], accessControl: false };
      return { principal: caller.name, kind: caller.kind, tokenId: caller.tokenId ?? '', bindings: [...caller.bindings], accessControl: true };
    }),

    createUser: unary(async (request) => {
      checkPrincipalName('name', request.name);
      checkDescription(request.description);
      const user: User = { name: request.name, kind: userKind(request.kind), description: request.description, createdAt: new Date() };
      const { users } = this.access.buckets;
      try {
        await this.put(users, user.name, user, (c) => this.directory.applyUser(c), true);
      } catch (err) {
        if (err instanceof RevisionConflictError) throw new GrpcError(GrpcStatus.ALREADY_EXISTS, 'ALREADY_EXISTS', `user "${user.name}" already exists`);
        throw err;
      }
      return { user };
    }),

    getUser: unary((request) => {
      const user = this.requireUser(request.name, 'name');
      return { user, bindings: this.directory.bindingsOf(user.name).sort(byBindingKey), tokens: this.tokensOf(user.name) };
    }),

    listUsers: unary((request) => {
      const page = paginate(this.directory.allUsers(), (u) => u.name, request.pageSize || DEFAULT_PAGE, request.pageToken);
      return { users: page.items, nextPageToken: page.nextPageToken };
    }),

    deleteUser: unary(async (request) => {
      const user = this.requireUser(request.name, 'name');
      const { users, tokens, bindings } = this.access.buckets;
      // Tokens and bindings first: a half-done delete leaves a user without access, never access without a user.
      const ownTokens = this.tokensOf(user.name);
      for (const t of ownTokens) await this.remove(tokens, t.id, (c) => this.directory.applyToken(c));
      const ownBindings = this.directory.bindingsOf(user.name);
      for (const b of ownBindings) await this.remove(bindings, bindingKey(b), (c) => this.directory.applyBinding(c));
      await this.remove(users, user.name, (c) => this.directory.applyUser(c));
      return { tokensDeleted: ownTokens.length, bindingsDeleted: ownBindings.length };
    }),

    createToken: unary(async (request) => {
      const user = this.requireUser(request.principal);
      checkDescription(request.description);
      checkLifetime(request.expiresInSeconds);
      const now = new Date();
      const generated = ACCESS_TOKENS.generate();
      const token: AccessToken = {
        id: generated.id,
        principal: user.name,
        description: request.description,
        createdAt: now,
        expiresAt: request.expiresInSeconds > 0 ? new Date(now.getTime() + request.expiresInSeconds * 1000) : undefined,
        revoked: false,
        revokedAt: undefined,
      };
      const record: AccessTokenRecord = { token, secretHash: hashSecret(generated.secret) };
      await this.put(this.access.buckets.tokens, token.id, record, (c) => this.directory.applyToken(c), true);
      return { token, secret: generated.key };
    }),

    listTokens: unary((request) => {
      if (request.principal !== '') this.requireUser(request.principal);
      return { tokens: this.tokensOf(request.principal) };
    }),

    revokeToken: unary(async (request) => {
      checkTokenId(request.id);
      const written = await this.access.buckets.tokens.store
        .modify(request.id, (current) => {
          if (!current) throw notFound('access token', request.id, 'list them with `gpufleet users token list`');
          const token = current.value.token!;
          return token.revoked ? undefined : { ...current.value, token: { ...token, revoked: true, revokedAt: new Date() } };
        })
        .catch((err: unknown) => {
          if (err instanceof RevisionConflictError) throw new GrpcError(GrpcStatus.ABORTED, 'ABORTED', `access token ${request.id} kept changing while being revoked; retry`);
          throw err;
        });
      if (!written) throw notFound('access token', request.id, 'list them with `gpufleet users token list`');
      this.directory.applyToken({ kind: 'put', key: request.id, value: written.value, revision: written.revision });
      return { token: written.value.token };
    }),

    createRoleBinding: unary(async (request) => {
      const user = this.requireUser(request.principal);
      checkBinding(request.role, request.namespace);
      const binding: RoleBinding = { principal: user.name, role: request.role, namespace: request.namespace, createdAt: new Date() };
      const key = bindingKey(binding);
      const existing = this.access.buckets.bindings.get(key)?.value;
      if (existing) return { binding: existing }; // granting a role twice is not an error
      await this.put(this.access.buckets.bindings, key, binding, (c) => this.directory.applyBinding(c), false);
      return { binding };
    }),

    listRoleBindings: unary((request) => {
      if (request.principal !== '') this.requireUser(request.principal);
      const all = request.principal === '' ? this.directory.allBindings() : this.directory.bindingsOf(request.principal);
      return { bindings: all.sort(byBindingKey) };
    }),

    deleteRoleBinding: unary(async (request) => {
      checkPrincipalName('principal', request.principal);
      checkBinding(request.role, request.namespace);
      const key = bindingKey(request);
      if (!this.directory.bindingsOf(request.principal).some((b) => bindingKey(b) === key)) {
        throw notFound('role binding', key, `list ${request.principal}'s with \`gpufleet users get ${request.principal}\``);
      }
      await this.remove(this.access.buckets.bindings, key, (c) => this.directory.applyBinding(c));
      return {};
    }),
  };
}
