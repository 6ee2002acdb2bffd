/** What resolving an artifact produces, and what the source resolvers share. */
import { Manifest, ManifestFile } from './manifest';
import { FetchFn, HttpLimits } from './http';
import { FailureReason } from './failure';
import { SecretRef } from './spec';

/**
 * Where the node cache fetches a file from. It holds no secret: when `bearerToken` is set the
 * cache adds `Authorization: Bearer <token>` with the token of the artifact's tokenFromSecret
 * (downloadRequest does). Hub URLs may redirect (LFS files go to a CDN): follow redirects, and
 * send Range requests to the URL the redirect ends at.
 */
export interface DownloadLocation {
  url: string;
  /** Extra request headers, never a credential. */
  headers: Record<string, string>;
  bearerToken: boolean;
}

export interface ResolvedFile extends ManifestFile {
  download: DownloadLocation;
}

export interface ArtifactResolution {
  manifest: Manifest;
  /** The manifest's files, same order, each with its download location. */
  files: ResolvedFile[];
  /** The commit the revision was pinned to (hub sources). Download URLs name it, never the branch. */
  commit?: string;
  /** The revision as the spec asked for it. */
  revision?: string;
  digestSource: 'Resolved';
}

export type ResolveOutcome =
  | { ok: true; resolution: ArtifactResolution }
  | {
      ok: false;
      reason: FailureReason;
      /** `<Reason>: <sentence>`. */
      message: string;
      /** Whether trying again later can succeed without a change to the spec or the source. */
      retryable: boolean;
      /**
       * Present when the source is unreachable (SourceUnavailable) and the spec gives
       * expectedDigest: the caller may go on with that digest (a tree already cached or held by a
       * peer under it) and mark the artifact Degraded, never gone.
       */
      fallback?: { manifestDigest: string; digestSource: 'Expected' };
    };

/** Looks a secret's value up; undefined when the secret or its key does not exist. */
export type SecretLookup = (ref: SecretRef) => Promise<string | undefined>;

export interface ResolveLimits extends HttpLimits {
  /** Pages of a hub's tree listing followed at most. */
  maxTreePages: number;
  /** Files a source may list at most. */
  maxFiles: number;
  /** Largest file a url source without a digest is streamed through to hash it. */
  maxUrlBytes: number;
  /** A streamed download that sends nothing for this long is abandoned. */
  idleTimeoutMs: number;
}

export const DEFAULT_LIMITS: ResolveLimits = {
  requestTimeoutMs: 30_000,
  maxJsonBytes: 32 * 1024 * 1024,
  maxTreePages: 1000,
  maxFiles: 100_000,
  maxUrlBytes: 2 * 1024 ** 4,
  idleTimeoutMs: 30_000,
};

export interface SourceContext {
  fetch: FetchFn;
  limits: ResolveLimits;
  /** The bearer token, when the spec names a secret. */
  token?: string;
  /** How the token is named in messages: the secret reference, never the value. */
  tokenName?: string;
  selected(path: string): boolean;
}

export interface SourceListing {
  commit?: string;
  /** Files the spec's patterns select. */
  files: ResolvedFile[];
  /** How many files the source listed before the patterns (for EmptyManifest's sentence). */
  listed: number;
}

/** The request the node cache sends for a file: the location's URL and headers, plus the token where it needs one. */
export function downloadRequest(location: DownloadLocation, token?: string): { url: string; headers: Record<string, string> } {
  if (location.bearerToken && !token) throw new Error(`downloadRequest: ${location.url} needs the artifact's token`);
  return { url: location.url, headers: { ...location.headers, ...(location.bearerToken && token ? { Authorization: `Bearer ${token}` } : {}) } };
}

export function encodePath(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/');
}
