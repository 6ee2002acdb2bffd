import { Metadata } from '@grpc/grpc-js';

/** `authorization: Bearer $GPUFLEET_ADMIN_TOKEN` for management APIs, when the token is set. */
export function adminMetadata(): Metadata {
  const md = new Metadata();
  const token = process.env.GPUFLEET_ADMIN_TOKEN;
  if (token) md.set('authorization', `Bearer ${token}`);
  return md;
}
