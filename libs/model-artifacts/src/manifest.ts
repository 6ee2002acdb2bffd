/**
 * The `gpustack-manifest v1` format: a header line, then one `<alg>:<hex> <size> <path>` line per
 * file in ascending byte order of the UTF-8 path, every line ending in LF. The manifest digest is
 * `sha256:` and the SHA-256 of those bytes, so two resolutions of the same files agree on it
 * whatever order the source listed them in.
 *
 * Per-file algorithms: `sha256` is the SHA-256 of the file's bytes (a hub's LFS oid);
 * `gitsha1` is the git blob id, SHA-1 of `blob <size>\0` followed by the bytes (the oid a hub
 * gives a file kept in git, not LFS). Both cover every byte, so a node can verify either while
 * it streams the file (createFileDigester).
 */
import { createHash, Hash } from 'node:crypto';

export const MANIFEST_HEADER = 'gpustack-manifest v1';
export const DIGEST_ALGORITHMS = { sha256: 64, gitsha1: 40 } as const;
export type DigestAlgorithm = keyof typeof DIGEST_ALGORITHMS;

export interface ManifestFile {
  /** Relative `/`-separated path, exactly as the source names it. */
  path: string;
  size: number;
  /** `<alg>:<lowercase hex>`, alg one of DIGEST_ALGORITHMS. */
  digest: string;
}

export interface Manifest {
  /** The canonical encoding, whose SHA-256 is `digest`. */
  text: string;
  /** `sha256:<64 hex>`. */
  digest: string;
  /** In the encoding's order. */
  files: ManifestFile[];
  totalSize: number;
}

export class ManifestError extends Error {
  constructor(message: string) {
    super(`INVALID_MANIFEST: ${message}`);
    this.name = 'ManifestError';
  }
}

/** Encode files into the canonical manifest; refuses (never drops) an invalid or duplicate entry. */
export function buildManifest(files: readonly ManifestFile[]): Manifest {
  const sorted = [...files].sort((a, b) => Buffer.compare(Buffer.from(a.path, 'utf8'), Buffer.from(b.path, 'utf8')));
  let text = `${MANIFEST_HEADER}\n`;
  let totalSize = 0;
  sorted.forEach((f, i) => {
    validateEntry(f);
    if (i > 0 && sorted[i - 1].path === f.path) throw new ManifestError(`path "${f.path}" is listed twice`);
    text += `${f.digest} ${f.size} ${f.path}\n`;
    totalSize += f.size;
  });
  return { text, digest: `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`, files: sorted.map((f) => ({ path: f.path, size: f.size, digest: f.digest })), totalSize };
}

/** Read a manifest back; the line number names what is wrong. Re-encoding must give the same text, so a non-canonical manifest is refused. */
export function parseManifest(text: string): Manifest {
  const lines = text.split('\n');
  if (lines[0] !== MANIFEST_HEADER) throw new ManifestError(`line 1: expected "${MANIFEST_HEADER}"`);
  if (lines[lines.length - 1] !== '') throw new ManifestError(`line ${lines.length}: the last line must end with a newline`);
  const files: ManifestFile[] = [];
  for (let i = 1; i < lines.length - 1; i++) {
    const m = /^(\S+) (\d+) (.+)$/.exec(lines[i]);
    if (!m) throw new ManifestError(`line ${i + 1}: expected "<alg>:<hex> <size> <path>"`);
    const entry = { digest: m[1], size: Number(m[2]), path: m[3] };
    try {
      validateEntry(entry);
    } catch (err) {
      throw new ManifestError(`line ${i + 1}: ${(err as Error).message.replace(/^INVALID_MANIFEST: /, '')}`);
    }
    files.push(entry);
  }
  const manifest = buildManifest(files);
  if (manifest.text !== text) throw new ManifestError('lines are not in ascending byte order of their paths (or a path repeats)');
  return manifest;
}

function validateEntry(f: ManifestFile): void {
  const p = f.path;
  if (typeof p !== 'string' || p === '' || /[\x00-\x1f\x7f]/.test(p) || p.split('/').some((s) => s === '' || s === '.' || s === '..') || Buffer.from(p, 'utf8').toString('utf8') !== p) {
    throw new ManifestError(`path ${JSON.stringify(p)} must be relative, valid UTF-8, with no control character and no empty, "." or ".." segment`);
  }
  if (!Number.isSafeInteger(f.size) || f.size < 0) throw new ManifestError(`path "${p}" has an invalid size ${f.size}`);
  const [alg, hex, extra] = f.digest.split(':');
  const length = DIGEST_ALGORITHMS[alg as DigestAlgorithm];
  if (extra !== undefined || !length || hex === undefined || hex.length !== length || !/^[0-9a-f]+$/.test(hex)) {
    throw new ManifestError(`path "${p}" has a malformed digest "${f.digest}" (expected sha256:<64 hex> or gitsha1:<40 hex>)`);
  }
}

/** Hashes a file as it streams, in the algorithm its manifest line names; `matches()` once every byte went through. */
export interface FileDigester {
  update(chunk: Uint8Array): void;
  /** `<alg>:<hex>` of what went through. */
  digest(): string;
  matches(): boolean;
}

export function createFileDigester(file: ManifestFile): FileDigester {
  const alg = file.digest.split(':')[0] as DigestAlgorithm;
  let hash: Hash;
  if (alg === 'gitsha1') hash = createHash('sha1').update(`blob ${file.size}\0`);
  else if (alg === 'sha256') hash = createHash('sha256');
  else throw new ManifestError(`unknown digest algorithm "${alg}" for "${file.path}"`);
  let seen = 0;
  let result: string | undefined;
  return {
    update(chunk) {
      if (result) throw new Error('createFileDigester: update() after digest()');
      seen += chunk.length;
      hash.update(chunk);
    },
    digest() {
      result ??= `${alg}:${hash.digest('hex')}`;
      return result;
    },
    matches() {
      return seen === file.size && this.digest() === file.digest;
    },
  };
}
