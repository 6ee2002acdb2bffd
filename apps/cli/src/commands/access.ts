import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { AccessServiceClient, AccessToken, PrincipalKind, Role, RoleBinding, User } from '@gpufleet/contracts';
import { callUnary } from '@gpufleet/grpc-kit';
import { cliChannelCredentials, cliClientOptions } from '../admin';
import { removeLogin, saveLogin, type Login } from '../login';
import { parseExpires } from '../keys/key-flags';
import { kindName, rolesSummary, tokenColumns, userColumns } from '../output/access';
import { OutputFormat, renderStructured, renderTable } from '../output/format';

type Out = (text: string) => void;

/** Runs `call` against the scheduler's AccessService, with the CLI's credential unless `ownToken` (the call sets its own). */
async function withAccess<T>(address: string, call: (client: AccessServiceClient) => Promise<T>, ownToken = false): Promise<T> {
  const options = cliClientOptions();
  const client = new AccessServiceClient(address, cliChannelCredentials(), ownToken ? { ...options, interceptors: [] } : options);
  try {
    return await call(client);
  } catch (err) {
    const e = err as ServiceError;
    if (e.code === status.UNAVAILABLE && !e.details?.startsWith('UNAVAILABLE:')) {
      throw new Error(`UNAVAILABLE: the scheduler's AccessService at ${address} does not answer; is the stack up (\`gpufleet up\`)? Or pass --scheduler HOST:PORT`);
    }
    throw err;
  } finally {
    client.close();
  }
}

/** --role admin|edit|view and --namespace as a binding; admin takes no namespace, edit and view need one ("*": every namespace). */
export function bindingFromFlags(role: string, namespace: string | undefined): { role: Role; namespace: string } {
  const roles: Record<string, Role> = { admin: Role.ROLE_ADMIN, edit: Role.ROLE_EDIT, view: Role.ROLE_VIEW };
  const parsed = roles[role];
  if (!parsed) throw new Error(`--role ${role}: expected admin, edit or view`);
  if (parsed === Role.ROLE_ADMIN) {
    if (namespace !== undefined) throw new Error('--namespace: the admin role is cluster-wide; leave --namespace out');
    return { role: parsed, namespace: '' };
  }
  if (namespace === undefined) throw new Error(`--namespace: the ${role} role is given in a namespace (or "*" for every namespace)`);
  return { role: parsed, namespace };
}

/** `--expires 30d` (or an ISO date) as expires_in_seconds; undefined: never. */
export function tokenLifetimeFromFlag(expires: string | undefined, now: Date): number {
  const { expiresAt, expiresInSeconds } = parseExpires(expires, now);
  return expiresAt ? Math.ceil((expiresAt.getTime() - now.getTime()) / 1000) : expiresInSeconds;
}

function bindingLine(b: RoleBinding): string {
  return rolesSummary([b]);
}

/** `gpufleet auth whoami`. */
export async function runWhoAmI(address: string, out: Out): Promise<void> {
  const me = await withAccess(address, (c) => callUnary(c, c.whoAmI, {}));
  if (!me.accessControl) return out('this stack runs without access control (`gpufleet up --no-auth`): every caller may do everything');
  out(`${me.principal} (${kindName(me.kind)}${me.tokenId ? `, token ${me.tokenId}` : ''}): ${rolesSummary(me.bindings)}`);
}

/**
 * `gpufleet auth login --token T [--scheduler H:P] [--router H:P]` (and the global --tls-*):
 * checks the token with WhoAmI over the same connection later commands will use, then keeps the
 * token, the addresses given and the TLS files in the home.
 */
export async function runLogin(address: string, home: string, login: Login, out: Out): Promise<void> {
  const me = await withAccess(address, (c) => callUnary(c, c.whoAmI, {}, { metadata: bearerMetadata(login.token) }), true);
  if (!me.accessControl) throw new Error(`FAILED_PRECONDITION: the scheduler at ${address} runs without access control (\`gpufleet up --no-auth\`): there is nothing to log in to`);
  const path = saveLogin(home, login);
  out(`logged in as ${me.principal} (${rolesSummary(me.bindings)})${login.scheduler ? ` at ${login.scheduler}` : ''}; kept in ${path}`);
}

export function runLogout(home: string, out: Out): void {
  out(removeLogin(home) ? 'logged out: the CLI uses the stack admin token again, if this machine has one' : 'not logged in');
}

function bearerMetadata(token: string): Metadata {
  const md = new Metadata();
  md.set('authorization', `Bearer ${token}`);
  return md;
}

export async function runUserCreate(address: string, name: string, o: { serviceAccount?: boolean; description?: string }, out: Out): Promise<void> {
  const kind = o.serviceAccount ? PrincipalKind.PRINCIPAL_KIND_SERVICE_ACCOUNT : PrincipalKind.PRINCIPAL_KIND_USER;
  const { user } = await withAccess(address, (c) => callUnary(c, c.createUser, { name, kind, description: o.description ?? '' }));
  out(`${kindName(user!.kind).toLowerCase()}/${name} created; give it a role with \`gpufleet users bind ${name} --role edit --namespace <ns>\` and a token with \`gpufleet users token create ${name}\``);
}

export async function runUserList(address: string, format: OutputFormat, out: Out): Promise<void> {
  const [users, bindings] = await withAccess(address, async (c) => {
    const all: User[] = [];
    let pageToken = '';
    do {
      const page = await callUnary(c, c.listUsers, { pageSize: 500, pageToken });
      all.push(...page.users);
      pageToken = page.nextPageToken;
    } while (pageToken !== '');
    return [all, (await callUnary(c, c.listRoleBindings, { principal: '' })).bindings] as const;
  });
  if (format === 'json' || format === 'yaml') return out(renderStructured(users.map((u) => User.toJSON(u)), format, false));
  if (users.length === 0) return out('No users yet; create one with `gpufleet users create NAME`.');
  out(renderTable(users, userColumns((name) => bindings.filter((b) => b.principal === name)), format === 'wide'));
}

export async function runUserGet(address: string, name: string, format: OutputFormat, out: Out): Promise<void> {
  const got = await withAccess(address, (c) => callUnary(c, c.getUser, { name }));
  if (format === 'json' || format === 'yaml') {
    return out(renderStructured([{ user: User.toJSON(got.user!), bindings: got.bindings.map((b) => RoleBinding.toJSON(b)), tokens: got.tokens.map((t) => AccessToken.toJSON(t)) }], format, true));
  }
  out(`Name:         ${got.user!.name}`);
  out(`Kind:         ${kindName(got.user!.kind)}`);
  if (got.user!.description) out(`Description:  ${got.user!.description}`);
  out(`Roles:        ${got.bindings.length === 0 ? 'none' : got.bindings.map(bindingLine).join(', ')}`);
  out('Tokens:');
  out(got.tokens.length === 0 ? '  none' : renderTable(got.tokens, tokenColumns, false).replace(/^/gm, '  '));
}

export async function runUserDelete(address: string, name: string, out: Out): Promise<void> {
  const r = await withAccess(address, (c) => callUnary(c, c.deleteUser, { name }));
  out(`user/${name} deleted with ${r.tokensDeleted} token(s) and ${r.bindingsDeleted} role binding(s)`);
}

export async function runBind(address: string, principal: string, role: string, namespace: string | undefined, out: Out): Promise<void> {
  const { binding } = await withAccess(address, (c) => callUnary(c, c.createRoleBinding, { principal, ...bindingFromFlags(role, namespace) }));
  out(`${principal} has ${bindingLine(binding!)}`);
}

export async function runUnbind(address: string, principal: string, role: string, namespace: string | undefined, out: Out): Promise<void> {
  const b = bindingFromFlags(role, namespace);
  await withAccess(address, (c) => callUnary(c, c.deleteRoleBinding, { principal, ...b }));
  out(`${principal} no longer has ${bindingLine({ principal, ...b, createdAt: undefined })}`);
}

export async function runTokenCreate(address: string, principal: string, o: { expires?: string; description?: string }, out: Out): Promise<void> {
  const expiresInSeconds = tokenLifetimeFromFlag(o.expires, new Date());
  const created = await withAccess(address, (c) => callUnary(c, c.createToken, { principal, description: o.description ?? '', expiresInSeconds }));
  const t = created.token!;
  out(`token ${t.id} for ${principal} (${t.expiresAt ? `expires ${t.expiresAt.toISOString()}` : 'never expires'}); shown this once, only its hash is stored:`);
  out(created.secret);
  out(`use it with \`gpufleet auth login --token <token>\` or GPUFLEET_TOKEN=<token>`);
}

export async function runTokenList(address: string, principal: string | undefined, format: OutputFormat, out: Out): Promise<void> {
  const { tokens } = await withAccess(address, (c) => callUnary(c, c.listTokens, { principal: principal ?? '' }));
  if (format === 'json' || format === 'yaml') return out(renderStructured(tokens.map((t) => AccessToken.toJSON(t)), format, false));
  if (tokens.length === 0) return out('No tokens found.');
  out(renderTable(tokens, tokenColumns, format === 'wide'));
}

export async function runTokenRevoke(address: string, id: string, out: Out): Promise<void> {
  const { token } = await withAccess(address, (c) => callUnary(c, c.revokeToken, { id }));
  out(`token ${id} of ${token!.principal} revoked${token!.revokedAt ? ` at ${token!.revokedAt.toISOString()}` : ''}: every scheduler and router replica refuses it within a second`);
}
