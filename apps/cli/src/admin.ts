import { randomBytes } from 'crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'fs';
import { join } from 'path';
import { InterceptingCall, Metadata, type Interceptor } from '@grpc/grpc-js';
import { channelCredentials, clientOptions } from '@gpufleet/grpc-kit';
import type { ChannelCredentials } from '@grpc/grpc-js';
import { readLogin } from './login';

/** Where `gpufleet up` keeps the stack's admin token (0600), like GPUStack's initial admin password. */
export function adminTokenPath(home: string): string {
  return join(home, 'admin-token');
}

/** GPUFLEET_ADMIN_TOKEN when set, else the token of the stack in `home`, else undefined (an open stack). */
export function loadAdminToken(home: string): string | undefined {
  const fromEnv = process.env.GPUFLEET_ADMIN_TOKEN?.trim();
  if (fromEnv) return fromEnv;
  const path = adminTokenPath(home);
  if (!existsSync(path)) return undefined;
  return readFileSync(path, 'utf8').trim() || undefined;
}

/**
 * The token `up` gives every service: GPUFLEET_ADMIN_TOKEN when set, else the one kept in the
 * home from an earlier run, else a new random one written there (256 bits, base64url, 0600).
 */
export function ensureAdminToken(home: string): { token: string; created: boolean } {
  const known = loadAdminToken(home);
  if (known) return { token: known, created: false };
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const token = randomBytes(32).toString('base64url');
  writeFileSync(adminTokenPath(home), `${token}\n`, { mode: 0o600, flag: 'wx' });
  return { token, created: true };
}

/**
 * The credential the CLI calls gRPC APIs with: GPUFLEET_TOKEN, else the token of `gpufleet auth
 * login` in the home, else the stack's admin token (GPUFLEET_ADMIN_TOKEN or `<home>/admin-token`).
 */
export function loadCliToken(home: string): string | undefined {
  const fromEnv = process.env.GPUFLEET_TOKEN?.trim();
  if (fromEnv) return fromEnv;
  return readLogin(home)?.token || loadAdminToken(home);
}

/** `authorization: Bearer <token>` of the CLI's credential (GPUFLEET_TOKEN, set from loadCliToken), when there is one. */
export function adminMetadata(): Metadata {
  const md = new Metadata();
  const token = process.env.GPUFLEET_TOKEN;
  if (token) md.set('authorization', `Bearer ${token}`);
  return md;
}

/** Adds the CLI's credential to every call of a client (unary and streams alike). */
function bearer(token: string): Interceptor {
  return (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        metadata.set('authorization', `Bearer ${token}`);
        next(metadata, listener);
      },
    });
}

/** Channel options of the CLI's clients: large responses, and the CLI's credential on every call when there is one. */
export function cliClientOptions(): ReturnType<typeof clientOptions> & { interceptors?: Interceptor[] } {
  const token = process.env.GPUFLEET_TOKEN;
  return token ? { ...clientOptions(), interceptors: [bearer(token)] } : clientOptions();
}

/** Whether a URL points at this machine: the only place `gpufleet logs` sends the admin token. */
export function isLoopbackUrl(url: string): boolean {
  try {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
    return host === 'localhost' || host === '::1' || /^127\./.test(host);
  } catch {
    return false;
  }
}

/**
 * The CLI's channel credentials: TLS when GPUFLEET_TLS_CA_FILE is set (`--tls-ca`), with a client
 * certificate when GPUFLEET_TLS_CERT_FILE and GPUFLEET_TLS_KEY_FILE are too (mutual TLS);
 * plain text otherwise (a local stack on loopback).
 */
export function cliChannelCredentials(): ChannelCredentials {
  const caFile = process.env.GPUFLEET_TLS_CA_FILE;
  const certFile = process.env.GPUFLEET_TLS_CERT_FILE;
  const keyFile = process.env.GPUFLEET_TLS_KEY_FILE;
  if ((certFile && !keyFile) || (!certFile && keyFile)) throw new Error('--tls-cert and --tls-key go together (GPUFLEET_TLS_CERT_FILE, GPUFLEET_TLS_KEY_FILE)');
  if (!caFile && !certFile) return channelCredentials();
  return channelCredentials({ caFile, certFile, keyFile });
}
