import { timingSafeEqual, createHash } from 'crypto';
import { Metadata } from '@grpc/grpc-js';
import { unauthenticated } from './errors';

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
