import { ArtifactPhase, type ArtifactManifest, type ModelArtifact } from '@gpufleet/contracts';
import type { CacheManifest } from '@gpufleet/model-cache';

/** An artifact a node's cache should hold now, with the manifest it resolved to. */
export interface WantedCopy {
  /** The artifacts bucket key, "<namespace>.<name>". */
  readonly artifact: string;
  readonly record: ModelArtifact;
  readonly manifestDigest: string;
}

/**
 * What `node` should hold: artifacts that name it (or "*") in `prefetch` and have a manifest.
 * A Degraded artifact keeps its manifest, so its copies are still fetched and kept: a hub
 * outage never takes weights away from a node.
 */
export function wantedCopies(node: string, artifacts: Iterable<[string, ModelArtifact]>): WantedCopy[] {
  const out: WantedCopy[] = [];
  for (const [artifact, record] of artifacts) {
    const status = record.status;
    const spec = record.spec;
    if (!spec || !status?.manifestDigest) continue;
    if (status.phase !== ArtifactPhase.ARTIFACT_PHASE_READY && status.phase !== ArtifactPhase.ARTIFACT_PHASE_DEGRADED) continue;
    if (!spec.prefetch.includes(node) && !spec.prefetch.includes('*')) continue;
    out.push({ artifact, record, manifestDigest: status.manifestDigest });
  }
  return out.sort((a, b) => a.artifact.localeCompare(b.artifact));
}

/** "sha256:<hex>" / "gitsha1:<hex>" → the cache's digest. */
function blobDigest(digest: string, path: string): { alg: 'sha256' | 'gitsha1'; hex: string } {
  const colon = digest.indexOf(':');
  const alg = digest.slice(0, colon);
  if (alg !== 'sha256' && alg !== 'gitsha1') throw new Error(`manifest file ${path}: digest ${JSON.stringify(digest)} is neither sha256:<hex> nor gitsha1:<hex>`);
  return { alg, hex: digest.slice(colon + 1) };
}

function bearerHeaders(token: string | undefined): Record<string, string> {
  return token ? { Authorization: `Bearer ${token}` } : {};
}

/**
 * The stored manifest as the cache takes it: each file with its download URL, plus the
 * artifact's token as a bearer header where the source wants one. The token lives only in this
 * request object, never in a record or a log line.
 */
export function cacheManifestOf(manifest: ArtifactManifest, token: string | undefined): CacheManifest {
  return {
    digest: manifest.digest,
    files: manifest.files.map((f) => {
      if (f.needsToken && !token) throw new Error(`manifest file ${f.path} needs the artifact's token, and it has none`);
      return {
        path: f.path,
        size: f.size,
        digest: blobDigest(f.digest, f.path),
        sources: f.downloadUrl ? [{ url: f.downloadUrl, headers: bearerHeaders(f.needsToken ? token : undefined) }] : [],
      };
    }),
  };
}

/** Hugging Face cache coordinates of a hub artifact ("org/name" at a commit), for engines given HF_HUB_CACHE. */
export function hfCoordinates(record: ModelArtifact, manifest: ArtifactManifest): { repo: string; commit: string; revision: string } | undefined {
  const source = record.spec?.source;
  if (!source?.repo || !manifest.commit) return undefined;
  return { repo: source.repo, commit: manifest.commit, revision: record.spec?.revision || 'main' };
}
