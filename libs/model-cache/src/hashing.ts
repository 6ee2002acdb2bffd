import { createHash, type Hash } from 'crypto';
import type { DigestAlg } from './manifest';

/** A streaming hasher for a manifest digest; gitsha1 is git's blob id: SHA-1 over `blob <size>\0` and the bytes. */
export function createBlobHasher(alg: DigestAlg, size: number): Hash {
  if (alg === 'sha256') return createHash('sha256');
  const h = createHash('sha1');
  h.update(`blob ${size}\0`);
  return h;
}
