import { createHash, timingSafeEqual } from 'crypto';

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

/**
 * Pod lists and logs can hold what engines and users print (prompts, tokens in a command line),
 * so with GPUFLEET_ADMIN_TOKEN set they need `Authorization: Bearer <that token>`: the bootstrap
 * admin token only, not access tokens or roles (docs/security.md#not-covered-yet). Returns why the
 * request is refused, or undefined. Constant-time compare.
 */
export function adminTokenProblem(authorization: string | string[] | undefined, token: string | undefined): string | undefined {
  if (!token) return undefined;
  const header = Array.isArray(authorization) ? authorization[0] : authorization;
  const presented = typeof header === 'string' && header.startsWith('Bearer ') ? header.slice(7) : undefined;
  if (!presented) return 'this API needs "Authorization: Bearer <admin token>" (GPUFLEET_ADMIN_TOKEN)';
  if (!timingSafeEqual(digest(presented), digest(token))) return 'the admin token presented is not valid';
  return undefined;
}
