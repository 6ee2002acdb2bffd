import { Metadata, status } from '@grpc/grpc-js';
import type { AccessDirectory, AccessError, Need, Principal } from '@gpufleet/access-core';
import { GrpcError, toServiceError } from './errors';

/** The request type of a grpc-js handler (unary or server stream). */
type RequestOf<H> = H extends (call: infer C, ...rest: never[]) => unknown ? (C extends { request: infer R } ? R : never) : never;

/**
 * What each method of a service needs of its caller, from its request. A mapped type over the
 * implementation: a method without a rule does not compile, so a new RPC cannot be left open.
 */
export type AccessRules<T> = { readonly [K in keyof T]-?: (request: RequestOf<T[K]>) => Need };

const STATUS: Record<AccessError['failure'], status> = {
  UNAUTHENTICATED: status.UNAUTHENTICATED,
  PERMISSION_DENIED: status.PERMISSION_DENIED,
  UNAVAILABLE: status.UNAVAILABLE,
};

const callers = new WeakMap<object, Principal>();

/** The principal a guarded call runs as; undefined on an open stack (no GPUFLEET_ADMIN_TOKEN). */
export function callerOf(call: object): Principal | undefined {
  return callers.get(call);
}

type GuardedCall = { metadata?: Metadata; request?: unknown; emit(event: 'error', err: unknown): boolean; once?(event: string, listener: () => void): unknown };
type AnyHandler = (call: GuardedCall, callback?: (err: unknown) => void) => unknown;

/** How often open streams are checked again without a change (a token's expiry is a matter of time alone). */
export const STREAM_RECHECK_MS = 30_000;

interface OpenStream {
  call: GuardedCall;
  check(): void;
}

/**
 * The streams (watches) a directory let open, checked again after every change of the access
 * buckets and every STREAM_RECHECK_MS: a revoked or expired token, a deleted user or a removed
 * binding ends them with the status a new call would get.
 */
class OpenStreams {
  private readonly streams = new Set<OpenStream>();
  private timer: NodeJS.Timeout | undefined;

  constructor(directory: AccessDirectory) {
    directory.onChange(() => this.recheck());
  }

  add(stream: OpenStream): void {
    this.streams.add(stream);
    const drop = () => this.remove(stream);
    for (const event of ['cancelled', 'close', 'finish', 'error']) stream.call.once?.(event, drop);
    if (!this.timer) {
      this.timer = setInterval(() => this.recheck(), STREAM_RECHECK_MS);
      this.timer.unref();
    }
  }

  private remove(stream: OpenStream): void {
    this.streams.delete(stream);
    if (this.streams.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private recheck(): void {
    for (const stream of [...this.streams]) {
      try {
        stream.check();
      } catch (err) {
        this.remove(stream);
        stream.call.emit('error', toServiceError(asGrpcError(err)));
      }
    }
  }
}

const openStreams = new WeakMap<AccessDirectory, OpenStreams>();

function asGrpcError(err: unknown): unknown {
  if (err instanceof Error && err.name === 'AccessError') {
    const { failure, sentence } = err as AccessError;
    return new GrpcError(STATUS[failure], failure, sentence);
  }
  return err;
}

/**
 * Every method of a service implementation behind authentication and its rule: unary calls
 * answer UNAUTHENTICATED / PERMISSION_DENIED, streams (watches) end with it before a message is
 * sent, and an open stream ends with it once its token is revoked or expires, its user is
 * deleted or its role removed. On an open stack (the directory is not enforced) the implementation is returned as it is.
 */
export function authorizeEvery<T extends object>(implementation: T, rules: AccessRules<T>, directory: AccessDirectory): T {
  if (!directory.enforced) return implementation;
  const guarded: Record<string, AnyHandler> = {};
  for (const [name, handler] of Object.entries(implementation as Record<string, AnyHandler>)) {
    const rule = (rules as Record<string, ((request: unknown) => Need) | undefined>)[name];
    if (!rule) throw new Error(`no access rule for gRPC method ${name}`);
    const action = name.charAt(0).toUpperCase() + name.slice(1);
    guarded[name] = (call, callback) => {
      const metadata = call.metadata ?? new Metadata();
      const value = metadata.get('authorization')[0];
      const header = typeof value === 'string' ? value : undefined;
      const check = () => {
        const principal = directory.authenticate(header, Date.now());
        directory.authorize(principal, rule(call.request), action);
        return principal;
      };
      try {
        callers.set(call, check());
        // A stream (no callback) stays authorized only while its token and role do.
        if (!callback) streamsOf(directory).add({ call, check });
      } catch (err) {
        const failure = toServiceError(asGrpcError(err));
        if (callback) callback(failure);
        else call.emit('error', failure);
        return undefined;
      }
      return handler(call, callback);
    };
  }
  return guarded as T;
}

function streamsOf(directory: AccessDirectory): OpenStreams {
  let streams = openStreams.get(directory);
  if (!streams) openStreams.set(directory, (streams = new OpenStreams(directory)));
  return streams;
}
