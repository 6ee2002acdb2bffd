/** Hash algorithms a manifest line may carry: LFS files are SHA-256, small git files the git blob SHA-1. */
export type DigestAlg = 'sha256' | 'gitsha1';

export interface BlobDigest {
  readonly alg: DigestAlg;
  /** lowercase hex */
  readonly hex: string;
}

/** Where a file's bytes can be fetched from (an origin: the hub's resolve URL, a mirror, a CDN). */
export interface FileSource {
  readonly url: string;
  /** sent with every request to this source, and to a redirect target on the same host only */
  readonly headers?: Readonly<Record<string, string>>;
}

export interface CacheManifestFile {
  /** relative path inside the tree, `/`-separated */
  readonly path: string;
  /** bytes */
  readonly size: number;
  readonly digest: BlobDigest;
  /** tried in order after the peers that hold the blob */
  readonly sources: readonly FileSource[];
}

/** What the cache needs of a resolved ModelArtifact: a manifest digest and its files. */
export interface CacheManifest {
  /** the manifest digest, `sha256:<hex>`: names the tree */
  readonly digest: string;
  readonly files: readonly CacheManifestFile[];
}

export class InvalidManifestError extends Error {
  readonly reason = 'InvalidManifest';
  constructor(readonly field: string, expected: string) {
    super(`INVALID_MANIFEST: ${field}: expected ${expected}`);
  }
}

const HEX_LENGTH: Record<DigestAlg, number> = { sha256: 64, gitsha1: 40 };
const MANIFEST_DIGEST = /^sha256:[0-9a-f]{64}$/;

export function blobKey(d: BlobDigest): string {
  return `${d.alg}:${d.hex}`;
}

/** Checks what the cache relies on: paths that cannot leave the tree, digests it can verify, sizes it can reserve. */
export function validateCacheManifest(m: CacheManifest, opts: { localRoots?: readonly string[] } = {}): void {
  if (typeof m.digest !== 'string' || !MANIFEST_DIGEST.test(m.digest)) {
    throw new InvalidManifestError('digest', `"sha256:" and 64 lowercase hex digits, got ${JSON.stringify(m.digest)}`);
  }
  const files: readonly CacheManifestFile[] = m.files;
  if (!Array.isArray(files) || files.length === 0) throw new InvalidManifestError('files', 'a non-empty list');
  const seen = new Set<string>();
  const dirs = new Set<string>();
  files.forEach((f: CacheManifestFile, i: number) => {
    const at = `files[${i}]`;
    validatePath(f.path, `${at}.path`);
    if (seen.has(f.path)) throw new InvalidManifestError(`${at}.path`, `a path listed once, "${f.path}" is repeated`);
    seen.add(f.path);
    const parts = f.path.split('/');
    for (let k = 1; k < parts.length; k++) dirs.add(parts.slice(0, k).join('/'));
    if (!Number.isSafeInteger(f.size) || f.size < 0) throw new InvalidManifestError(`${at}.size`, `a non-negative integer of bytes, got ${f.size}`);
    const alg = f.digest?.alg;
    if (alg !== 'sha256' && alg !== 'gitsha1') throw new InvalidManifestError(`${at}.digest.alg`, `"sha256" or "gitsha1", got ${JSON.stringify(alg)}`);
    const hex = f.digest.hex;
    if (typeof hex !== 'string' || !new RegExp(`^[0-9a-f]{${HEX_LENGTH[alg]}}$`).test(hex)) {
      throw new InvalidManifestError(`${at}.digest.hex`, `${HEX_LENGTH[alg]} lowercase hex digits for ${alg}, got ${JSON.stringify(hex)}`);
    }
    const sources: readonly FileSource[] = f.sources;
    if (!Array.isArray(sources)) throw new InvalidManifestError(`${at}.sources`, 'a list of {url, headers}');
    sources.forEach((s: FileSource, j: number) => {
      let url: URL;
      try {
        url = new URL(s.url);
      } catch {
        throw new InvalidManifestError(`${at}.sources[${j}].url`, `an absolute http(s) URL, got ${JSON.stringify(s.url)}`);
      }
      if (url.protocol === 'file:') {
        // A LOCAL artifact's file on this node: only below a root the cache was given (the
        // manifest's path comes from a user's spec; a node cache must not copy any file it can read).
        const roots = opts.localRoots ?? [];
        const path = decodeURIComponent(url.pathname);
        if (url.host !== '' || url.search || url.hash || !roots.some((r) => path.startsWith(r.endsWith('/') ? r : `${r}/`))) {
          throw new InvalidManifestError(`${at}.sources[${j}].url`, `an http: or https: URL, or a file:/// URL below one of the cache's localRoots (${roots.length > 0 ? roots.join(', ') : 'none configured'}), got ${url.protocol}//${url.host}${url.pathname}`);
        }
      } else if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        throw new InvalidManifestError(`${at}.sources[${j}].url`, `an http: or https: URL, got ${url.protocol}`);
      }
    });
  });
  for (const d of dirs) {
    if (seen.has(d)) throw new InvalidManifestError('files', `"${d}" to be either a file or a directory, it is both`);
  }
}

function validatePath(p: unknown, field: string): void {
  if (typeof p !== 'string' || p.length === 0) throw new InvalidManifestError(field, 'a non-empty relative path');
  if (p.startsWith('/') || p.includes('\\') || p.includes('\0')) {
    throw new InvalidManifestError(field, `a relative "/"-separated path without "\\" or NUL, got ${JSON.stringify(p)}`);
  }
  for (const part of p.split('/')) {
    if (part === '' || part === '.' || part === '..') {
      throw new InvalidManifestError(field, `a path without empty, "." or ".." segments, got ${JSON.stringify(p)}`);
    }
  }
}
