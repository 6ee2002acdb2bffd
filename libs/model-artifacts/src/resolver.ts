/**
 * resolveArtifact: pin the revision, list the selected files with their digests, build the
 * manifest and check it against expectedDigest. It never throws for anything the source or the
 * secret store does: every failure comes back as a reason and a sentence.
 */
import { ResolutionError } from './failure';
import { FetchFn } from './http';
import { resolveHuggingFace } from './huggingface';
import { resolveLocal } from './local-source';
import { buildManifest, ManifestError } from './manifest';
import { resolveModelScope } from './modelscope';
import { isSelected } from './patterns';
import { DEFAULT_LIMITS, ResolveLimits, ResolveOutcome, SecretLookup, SourceContext, SourceListing } from './resolution';
import { ModelArtifactSpec, SecretRef } from './spec';
import { resolveUrl } from './url-source';

export interface ResolverOptions {
  /** The HTTP client; default the global fetch. */
  fetch?: FetchFn;
  /** Where tokenFromSecret is looked up; required when a spec names one. */
  secrets?: SecretLookup;
  limits?: Partial<ResolveLimits>;
}

export async function resolveArtifact(spec: ModelArtifactSpec, options: ResolverOptions = {}): Promise<ResolveOutcome> {
  try {
    const resolution = await resolveOrThrow(spec, options);
    return { ok: true, resolution };
  } catch (err) {
    if (!(err instanceof ResolutionError)) throw err;
    const outcome: ResolveOutcome = { ok: false, reason: err.reason, message: err.message, retryable: err.retryable };
    if (err.reason === 'SourceUnavailable' && spec.expectedDigest) {
      outcome.fallback = { manifestDigest: spec.expectedDigest, digestSource: 'Expected' };
      outcome.message += `; until it answers, the artifact goes on with its expectedDigest ${spec.expectedDigest}`;
    }
    return outcome;
  }
}

async function resolveOrThrow(spec: ModelArtifactSpec, options: ResolverOptions) {
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const ctx: SourceContext = {
    fetch: options.fetch ?? fetch,
    limits,
    selected: (path) => isSelected(path, spec.allowPatterns, spec.ignorePatterns),
  };
  if (spec.tokenFromSecret) {
    ctx.tokenName = secretName(spec.tokenFromSecret);
    ctx.token = await tokenOf(spec.tokenFromSecret, options.secrets);
  }
  const source = spec.source;
  let listing: SourceListing;
  switch (source.kind) {
    case 'huggingface':
      listing = await resolveHuggingFace(source, spec.revision ?? 'main', ctx);
      break;
    case 'modelscope':
      listing = await resolveModelScope(source, spec.revision ?? 'master', ctx);
      break;
    case 'url':
      listing = await resolveUrl(source, ctx);
      break;
    case 'local':
      listing = await resolveLocal(source, ctx);
      break;
  }
  if (listing.files.length === 0) {
    const where = spec.revision ? ` at ${spec.revision}` : '';
    throw new ResolutionError(
      'EmptyManifest',
      `no file of ${describeSource(spec)}${where} is selected (${listing.listed} listed; allowPatterns ${JSON.stringify(spec.allowPatterns)}, ignorePatterns ${JSON.stringify(spec.ignorePatterns)}); widen the patterns`,
    );
  }
  let manifest;
  try {
    manifest = buildManifest(listing.files);
  } catch (err) {
    if (err instanceof ManifestError) throw new ResolutionError('SourceUnavailable', `${describeSource(spec)} listed files no manifest can hold: ${err.message}`);
    throw err;
  }
  if (spec.expectedDigest && manifest.digest !== spec.expectedDigest) {
    throw new ResolutionError(
      'DigestMismatch',
      `${describeSource(spec)} resolved to ${manifest.digest} (${manifest.files.length} files${listing.commit ? ` at commit ${listing.commit}` : ''}), but expectedDigest is ${spec.expectedDigest}: the source serves other content than the artifact pins`,
    );
  }
  const byPath = new Map(listing.files.map((f) => [f.path, f]));
  return {
    manifest,
    files: manifest.files.map((f) => ({ ...f, download: (byPath.get(f.path) as (typeof listing.files)[number]).download })),
    ...(listing.commit ? { commit: listing.commit } : {}),
    ...(spec.revision ? { revision: spec.revision } : {}),
    digestSource: 'Resolved' as const,
  };
}

async function tokenOf(ref: SecretRef, secrets: SecretLookup | undefined): Promise<string> {
  const name = secretName(ref);
  if (!secrets) throw new ResolutionError('SecretNotFound', `${name} is named by tokenFromSecret but this resolver has no secret store`);
  const value = await secrets(ref);
  if (value === undefined) throw new ResolutionError('SecretNotFound', `${name} does not exist; create it or fix tokenFromSecret`);
  // a value written with `echo` ends in a newline: that whitespace is no part of any token
  const token = value.trim();
  if (!/^[\x21-\x7e]{1,4096}$/.test(token)) throw new ResolutionError('InvalidToken', `${name} does not hold a usable bearer token (empty, over 4096 characters, or with spaces or non-ASCII characters)`);
  return token;
}

function secretName(ref: SecretRef): string {
  return `secret ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name} key ${ref.key}`;
}

export function describeSource(spec: ModelArtifactSpec): string {
  const s = spec.source;
  switch (s.kind) {
    case 'huggingface':
      return `${s.repo} on ${s.endpoint}`;
    case 'modelscope':
      return `${s.repo} on ModelScope ${s.endpoint}`;
    case 'url':
      return s.url;
    case 'local':
      return `local path ${s.path}`;
  }
}
