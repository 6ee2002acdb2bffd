import { ArtifactPhase, WorkloadPhase, type ArtifactManifest, type ModelArtifact, type Workload } from '@gpufleet/contracts';
import type { CacheManifest } from '@gpufleet/model-cache';

/** An artifact a node's cache should hold now, with the manifest it resolved to. */
export interface WantedCopy {
  /** The artifacts bucket key, "<namespace>.<name>". */
  readonly artifact: string;
  readonly record: ModelArtifact;
  readonly manifestDigest: string;
  /** A workload placed on the node runs it: its tree is leased (never evicted) while this holds. */
  readonly inUse: boolean;
}

/**
 * The artifacts ("<namespace>.<name>") that pods placed on `node` load: admitted workloads with
 * a placement on the node whose template's EngineRun names an artifact of the workload's
 * namespace. A finished or pending workload has no pods, so it needs nothing.
 */
export function artifactsInUse(node: string, workloads: Iterable<Workload>): Set<string> {
  const out = new Set<string>();
  for (const w of workloads) {
    const artifact = w.spec?.template?.engine?.artifact;
    if (!artifact || w.status?.phase !== WorkloadPhase.WORKLOAD_PHASE_ADMITTED) continue;
    if (!w.status.placements.some((p) => p.node === node)) continue;
    out.add(`${w.spec!.namespace}.${artifact}`);
  }
  return out;
}

/**
 * What `node` should hold: artifacts with a manifest that name it (or "*") in `prefetch`, or that
 * a pod placed on it loads (`inUse`, from artifactsInUse). A Degraded artifact keeps its
 * manifest, so its copies are still fetched and kept: a hub outage never takes weights away from
 * a node.
 */
export function wantedCopies(node: string, artifacts: Iterable<[string, ModelArtifact]>, inUse: ReadonlySet<string> = new Set()): WantedCopy[] {
  const out: WantedCopy[] = [];
  for (const [artifact, record] of artifacts) {
    const status = record.status;
    const spec = record.spec;
    if (!spec || !status?.manifestDigest) continue;
    if (status.phase !== ArtifactPhase.ARTIFACT_PHASE_READY && status.phase !== ArtifactPhase.ARTIFACT_PHASE_DEGRADED) continue;
    const used = inUse.has(artifact);
    if (!used && !spec.prefetch.includes(node) && !spec.prefetch.includes('*')) continue;
    out.push({ artifact, record, manifestDigest: status.manifestDigest, inUse: used });
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
