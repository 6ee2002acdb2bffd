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

type AnyHandler = (call: { metadata?: Metadata; request?: unknown; emit(event: 'error', err: unknown): boolean }, callback?: (err: unknown) => void) => unknown;

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
 * sent. On an open stack (the directory is not enforced) the implementation is returned as it is.
 */
export function authorizeEvery<T extends object>(implementation: T, rules: AccessRules<T>, directory: AccessDirectory): T {
  if (!directory.enforced) return implementation;
  const guarded: Record<string, AnyHandler> = {};
  for (const [name, handler] of Object.entries(implementation as Record<string, AnyHandler>)) {
    const rule = (rules as Record<string, ((request: unknown) => Need) | undefined>)[name];
    if (!rule) throw new Error(`no access rule for gRPC method ${name}`);
    const action = name.charAt(0).toUpperCase() + name.slice(1);
    guarded[name] = (call, callback) => {
      try {
        const metadata = call.metadata ?? new Metadata();
        const header = metadata.get('authorization')[0];
        const principal = directory.authenticate(typeof header === 'string' ? header : undefined, Date.now());
        directory.authorize(principal, rule(call.request), action);
        callers.set(call, principal);
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
