import { createHash, randomBytes } from 'crypto';
import { createBlobHasher } from '../hashing';
import type { CacheManifest, DigestAlg, FileSource } from '../manifest';

export interface TestFile {
  readonly path: string;
  readonly size: number;
  readonly alg?: DigestAlg;
}

export interface TestArtifact {
  readonly contents: Record<string, Buffer>;
  /** a manifest whose files are fetched from each of `origins` (base URLs) in order */
  manifest(origins: ReadonlyArray<string | ((path: string) => FileSource)>): CacheManifest;
  readonly totalBytes: number;
}

/** Random bytes per file; digests as the resolver computes them (sha256 for LFS, git blob sha1 for small files). */
export function makeArtifact(files: readonly TestFile[]): TestArtifact {
  const contents: Record<string, Buffer> = {};
  const entries = files.map((f) => {
    const bytes = randomBytes(f.size);
    contents[f.path] = bytes;
    const alg = f.alg ?? 'sha256';
    return { path: f.path, size: f.size, digest: { alg, hex: createBlobHasher(alg, f.size).update(bytes).digest('hex') } };
  });
  const lines = [...entries].sort((a, b) => (a.path < b.path ? -1 : 1)).map((e) => `${e.digest.alg}:${e.digest.hex} ${e.size} ${e.path}\n`);
  const digest = `sha256:${createHash('sha256').update(lines.join('')).digest('hex')}`;
  return {
    contents,
    totalBytes: files.reduce((n, f) => n + f.size, 0),
    manifest: (origins) => ({
      digest,
      files: entries.map((e) => ({ ...e, sources: origins.map((o) => (typeof o === 'string' ? { url: `${o}/${e.path}` } : o(e.path))) })),
    }),
  };
}
