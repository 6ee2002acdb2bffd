import { timingSafeEqual, createHash } from 'crypto';
import { Metadata } from '@grpc/grpc-js';
import { toServiceError, unauthenticated } from './errors';

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

/**
 * Management APIs require `authorization: Bearer <GPUFLEET_ADMIN_TOKEN>` when a token is
 * configured; without one they are open (the local stack). Compared in constant time.
 */
export function requireAdmin(metadata: Metadata, token: string | undefined): void {
  if (!token) return;
  const header = metadata.get('authorization')[0];
  const presented = typeof header === 'string' && header.startsWith('Bearer ') ? header.slice(7) : undefined;
  if (!presented) throw unauthenticated('this management API needs "authorization: Bearer <admin token>" (GPUFLEET_ADMIN_TOKEN)');
  if (!timingSafeEqual(digest(presented), digest(token))) throw unauthenticated('the admin token presented is not valid');
}

type AnyHandler = (call: { metadata?: Metadata; emit(event: 'error', err: unknown): boolean }, callback?: (err: unknown) => void) => unknown;

/**
 * Every method of a service implementation behind requireAdmin: unary calls answer
 * UNAUTHENTICATED, streams end with it before a message is sent. With no token configured the
 * implementation is returned as it is (the open local stack of `gpufleet up --no-auth`).
 */
export function requireAdminOnEvery<T extends object>(implementation: T, token: string | undefined): T {
  if (!token) return implementation;
  const guarded: Record<string, AnyHandler> = {};
  for (const [name, handler] of Object.entries(implementation as Record<string, AnyHandler>)) {
    guarded[name] = (call, callback) => {
      try {
        requireAdmin(call.metadata ?? new Metadata(), token);
      } catch (err) {
        if (callback) callback(toServiceError(err));
        else call.emit('error', toServiceError(err));
        return undefined;
      }
      return handler(call, callback);
    };
  }
  return guarded as T;
}
