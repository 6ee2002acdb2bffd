import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'fs';
import { join, resolve } from 'path';

/**
 * What `gpufleet auth login` keeps in the home (login.json, 0600): the access token, and for a
 * remote cluster where the scheduler and the router are and the TLS files to reach them, so
 * later commands need neither flags nor environment. Flags and GPUFLEET_* variables still win.
 */
export interface Login {
  token: string;
  /** host:port of the scheduler; used when no local stack runs from this home. */
  scheduler?: string;
  /** host:port of the router's KeyService. */
  router?: string;
  /** host:port of model delivery's ModelDeliveryService. */
  delivery?: string;
  /** Absolute paths, as given to --tls-ca/--tls-cert/--tls-key at login. */
  tls?: { ca?: string; cert?: string; key?: string };
}

export function loginPath(home: string): string {
  return join(home, 'login.json');
}

function optionalString(value: unknown, field: string, path: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') throw new Error(`${path}: ${field} must be a non-empty string; log in again with \`gpufleet auth login\``);
  return value;
}

/** The saved login, undefined when there is none; a file that is not a login is an error that says where it is. */
export function readLogin(home: string): Login | undefined {
  const path = loginPath(home);
  if (!existsSync(path)) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    throw new Error(`${path} is not JSON; log in again with \`gpufleet auth login\` or remove it with \`gpufleet auth logout\``);
  }
  const o = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const token = optionalString(o.token, 'token', path);
  if (!token) throw new Error(`${path} has no token; log in again with \`gpufleet auth login\``);
  const tls = (typeof o.tls === 'object' && o.tls !== null ? o.tls : {}) as Record<string, unknown>;
  const files = { ca: optionalString(tls.ca, 'tls.ca', path), cert: optionalString(tls.cert, 'tls.cert', path), key: optionalString(tls.key, 'tls.key', path) };
  return {
    token,
    scheduler: optionalString(o.scheduler, 'scheduler', path),
    router: optionalString(o.router, 'router', path),
    delivery: optionalString(o.delivery, 'delivery', path),
    tls: files.ca || files.cert || files.key ? files : undefined,
  };
}

/** Replaces the saved login atomically (0600: it holds a credential). */
export function saveLogin(home: string, login: Login): string {
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const path = loginPath(home);
  const tmp = `${path}.tmp`;
  rmSync(tmp, { force: true });
  const tls = login.tls && { ca: login.tls.ca && resolve(login.tls.ca), cert: login.tls.cert && resolve(login.tls.cert), key: login.tls.key && resolve(login.tls.key) };
  writeFileSync(tmp, JSON.stringify({ ...login, tls }, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
  renameSync(tmp, path);
  return path;
}

/** Forgets the login; true when there was one. */
export function removeLogin(home: string): boolean {
  const path = loginPath(home);
  if (!existsSync(path)) return false;
  rmSync(path);
  return true;
}

/** The TLS files of the saved login as GPUFLEET_TLS_* variables, for those the flags and environment left unset. */
export function applyLoginTls(login: Login | undefined, env: NodeJS.ProcessEnv): void {
  if (!login?.tls || env.GPUFLEET_TLS_CA_FILE || env.GPUFLEET_TLS_CERT_FILE || env.GPUFLEET_TLS_KEY_FILE) return;
  if (login.tls.ca) env.GPUFLEET_TLS_CA_FILE = login.tls.ca;
  if (login.tls.cert) env.GPUFLEET_TLS_CERT_FILE = login.tls.cert;
  if (login.tls.key) env.GPUFLEET_TLS_KEY_FILE = login.tls.key;
}
