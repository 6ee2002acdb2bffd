/**
 * The ModelArtifact spec: where the weights come from and which of them, validated once, with an
 * error that names each bad field. Every field is immutable: an artifact is an identity, and a
 * different revision or selection is a different artifact.
 */

export const DEFAULT_HF_ENDPOINT = 'https://huggingface.co';
export const DEFAULT_MODELSCOPE_ENDPOINT = 'https://www.modelscope.cn';
export const SOURCE_KINDS = ['huggingface', 'modelscope', 'url', 'local'] as const;
export type SourceKind = (typeof SOURCE_KINDS)[number];

export type ArtifactSource =
  /** A Hugging Face hub, or anything speaking its API (a mirror, an air-gapped hub): `endpoint` without a trailing slash. */
  | { kind: 'huggingface'; repo: string; endpoint: string }
  | { kind: 'modelscope'; repo: string; endpoint: string }
  /** One file over HTTP(S). Without `digest` the resolver streams it once to compute its SHA-256. */
  | { kind: 'url'; url: string; digest?: string; size?: number; fileName?: string }
  /** A file or directory on the host that resolves it (absolute path). */
  | { kind: 'local'; path: string };

/** A key of a Secret; its value is the bearer token. */
export interface SecretRef {
  name: string;
  key: string;
  namespace?: string;
}

export interface ModelArtifactSpec {
  source: ArtifactSource;
  /** Branch, tag or commit (hub sources only). Default `main` (Hugging Face) or `master` (ModelScope). */
  revision?: string;
  /** huggingface_hub's `allow_patterns`: fnmatch globs (`*` crosses `/`; a pattern ending in `/` means everything under it). Empty: every file. */
  allowPatterns: string[];
  /** huggingface_hub's `ignore_patterns`: a file matching any is left out, even when allowed. */
  ignorePatterns: string[];
  /** `sha256:<64 hex>`: the manifest digest this artifact must resolve to; used as is while the source is unreachable. */
  expectedDigest?: string;
  tokenFromSecret?: SecretRef;
}

export interface SpecProblem {
  /** Dotted path of the field, e.g. `source.repo`, `allowPatterns[2]`. */
  field: string;
  message: string;
}

export class ArtifactSpecError extends Error {
  constructor(readonly problems: SpecProblem[]) {
    super(`INVALID_ARTIFACT_SPEC: ${problems.map((p) => `${p.field}: ${p.message}`).join('; ')}`);
    this.name = 'ArtifactSpecError';
  }
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;
const REPO_PART = /^[A-Za-z0-9](?:[\w.-]{0,94}[\w])?$/;
const MAX_PATTERNS = 1000;
const MAX_PATTERN_LENGTH = 1024;
const MAX_REVISION_LENGTH = 256;
const SECRET_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const SECRET_KEY = /^[-._a-zA-Z0-9]{1,253}$/;

export function isManifestDigest(value: string): boolean {
  return DIGEST.test(value);
}

/** Check an untrusted spec and return it with defaults filled in; throws ArtifactSpecError listing every problem. */
export function validateArtifactSpec(input: unknown): ModelArtifactSpec {
  const problems: SpecProblem[] = [];
  const bad = (field: string, message: string): undefined => {
    problems.push({ field, message });
    return undefined;
  };
  if (!isRecord(input)) throw new ArtifactSpecError([{ field: 'spec', message: 'expected an object' }]);
  unknownKeys(input, ['source', 'revision', 'allowPatterns', 'ignorePatterns', 'expectedDigest', 'tokenFromSecret'], '', bad);

  const source = validateSource(input.source, bad);
  const kind = source?.kind;
  const hub = kind === 'huggingface' || kind === 'modelscope';

  let revision: string | undefined;
  if (input.revision !== undefined) {
    if (!hub && kind) bad('revision', `a ${kind} source has no revisions; leave it out`);
    else if (typeof input.revision !== 'string' || input.revision === '') bad('revision', 'expected a branch, tag or commit id');
    else if (input.revision.length > MAX_REVISION_LENGTH) bad('revision', `longer than ${MAX_REVISION_LENGTH} characters`);
    else if (/[\s\x00-\x1f\x7f~^:?*[\\]/.test(input.revision) || input.revision.split('/').some((s) => s === '' || s === '.' || s === '..')) {
      bad('revision', `"${input.revision}" is not a valid git ref or commit id`);
    } else revision = input.revision;
  }
  if (hub && revision === undefined) revision = kind === 'modelscope' ? 'master' : 'main';

  const allowPatterns = patterns(input.allowPatterns, 'allowPatterns', kind, bad);
  const ignorePatterns = patterns(input.ignorePatterns, 'ignorePatterns', kind, bad);

  let expectedDigest: string | undefined;
  if (input.expectedDigest !== undefined) {
    if (typeof input.expectedDigest !== 'string' || !DIGEST.test(input.expectedDigest)) bad('expectedDigest', 'expected "sha256:" and 64 lowercase hex digits (a manifest digest)');
    else expectedDigest = input.expectedDigest;
  }

  let tokenFromSecret: SecretRef | undefined;
  if (input.tokenFromSecret !== undefined) {
    if (kind === 'local') bad('tokenFromSecret', 'a local source needs no token; leave it out');
    else tokenFromSecret = validateSecretRef(input.tokenFromSecret, bad);
  }

  if (problems.length > 0 || !source) throw new ArtifactSpecError(problems);
  const spec: ModelArtifactSpec = { source, allowPatterns: allowPatterns ?? [], ignorePatterns: ignorePatterns ?? [] };
  if (revision !== undefined) spec.revision = revision;
  if (expectedDigest !== undefined) spec.expectedDigest = expectedDigest;
  if (tokenFromSecret) spec.tokenFromSecret = tokenFromSecret;
  return spec;
}

function validateSource(input: unknown, bad: (field: string, message: string) => undefined): ArtifactSource | undefined {
  if (!isRecord(input)) return bad('source', `expected an object with a kind (${SOURCE_KINDS.join(', ')})`);
  const kind = input.kind;
  if (typeof kind !== 'string' || !(SOURCE_KINDS as readonly string[]).includes(kind)) return bad('source.kind', `expected one of ${SOURCE_KINDS.join(', ')}, got ${JSON.stringify(kind)}`);
  switch (kind as SourceKind) {
    case 'huggingface':
    case 'modelscope': {
      unknownKeys(input, ['kind', 'repo', 'endpoint'], 'source.', bad);
      const hf = kind === 'huggingface';
      const repo = input.repo;
      const parts = typeof repo === 'string' ? repo.split('/') : [];
      const shapeOk = (parts.length === 2 || (hf && parts.length === 1)) && parts.every((p) => REPO_PART.test(p) && !p.includes('--') && !p.includes('..'));
      if (!shapeOk) bad('source.repo', `expected "org/name"${hf ? ' (or a legacy single name)' : ''} of letters, digits, "-", "_" and ".", got ${JSON.stringify(repo)}`);
      const endpoint = input.endpoint === undefined ? (hf ? DEFAULT_HF_ENDPOINT : DEFAULT_MODELSCOPE_ENDPOINT) : httpUrl(input.endpoint, 'source.endpoint', bad, true);
      if (!shapeOk || !endpoint) return undefined;
      return { kind: kind as 'huggingface' | 'modelscope', repo: repo as string, endpoint: endpoint.replace(/\/+$/, '') };
    }
    case 'url': {
      unknownKeys(input, ['kind', 'url', 'digest', 'size', 'fileName'], 'source.', bad);
      const url = httpUrl(input.url, 'source.url', bad, false);
      let ok = url !== undefined;
      const out: ArtifactSource = { kind: 'url', url: url ?? '' };
      if (input.digest !== undefined) {
        if (typeof input.digest !== 'string' || !DIGEST.test(input.digest)) ok = !!bad('source.digest', 'expected "sha256:" and 64 lowercase hex digits (the file\'s SHA-256)');
        else out.digest = input.digest;
      }
      if (input.size !== undefined) {
        if (typeof input.size !== 'number' || !Number.isSafeInteger(input.size) || input.size < 0) ok = !!bad('source.size', 'expected a non-negative integer (bytes)');
        else out.size = input.size;
      }
      if (input.fileName !== undefined) {
        if (typeof input.fileName !== 'string' || !/^[^/\\\x00-\x1f]{1,255}$/.test(input.fileName) || input.fileName === '.' || input.fileName === '..') ok = !!bad('source.fileName', 'expected a file name without "/" (the name the file gets in the tree)');
        else out.fileName = input.fileName;
      }
      return ok ? out : undefined;
    }
    case 'local': {
      unknownKeys(input, ['kind', 'path'], 'source.', bad);
      const path = input.path;
      if (typeof path !== 'string' || !path.startsWith('/') || path.split('/').some((s) => s === '..') || /[\x00]/.test(path)) return bad('source.path', `expected an absolute path without ".." segments, got ${JSON.stringify(path)}`);
      return { kind: 'local', path: path.length > 1 ? path.replace(/\/+$/, '') : path };
    }
  }
}

function httpUrl(value: unknown, field: string, bad: (field: string, message: string) => undefined, isEndpoint: boolean): string | undefined {
  if (typeof value !== 'string') return bad(field, 'expected an http:// or https:// URL');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return bad(field, `expected an http:// or https:// URL, got ${JSON.stringify(value)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return bad(field, `expected an http:// or https:// URL, got a ${url.protocol} URL`);
  // a credential in a URL ends up in logs and status; it belongs in tokenFromSecret
  if (url.username || url.password) return bad(field, 'must not carry a user name or password; put the token in a Secret and name it in tokenFromSecret');
  if (isEndpoint && (url.search || url.hash)) return bad(field, 'expected the hub\'s base URL, without a query or fragment');
  return isEndpoint ? value : url.toString();
}

function patterns(value: unknown, field: string, kind: SourceKind | undefined, bad: (field: string, message: string) => undefined): string[] | undefined {
  if (value === undefined) return [];
  if (kind === 'url') return bad(field, 'a url source is one file; patterns do not apply');
  if (!Array.isArray(value)) return bad(field, 'expected a list of glob patterns');
  if (value.length > MAX_PATTERNS) return bad(field, `at most ${MAX_PATTERNS} patterns, got ${value.length}`);
  const out: string[] = [];
  value.forEach((p, i) => {
    if (typeof p !== 'string' || p === '') bad(`${field}[${i}]`, 'expected a non-empty glob pattern');
    else if (p.length > MAX_PATTERN_LENGTH) bad(`${field}[${i}]`, `longer than ${MAX_PATTERN_LENGTH} characters`);
    else out.push(p);
  });
  return out;
}

function validateSecretRef(value: unknown, bad: (field: string, message: string) => undefined): SecretRef | undefined {
  if (!isRecord(value)) return bad('tokenFromSecret', 'expected { name, key } of a Secret');
  unknownKeys(value, ['name', 'key', 'namespace'], 'tokenFromSecret.', bad);
  const { name, key, namespace } = value;
  let ok = true;
  if (typeof name !== 'string' || !SECRET_NAME.test(name)) ok = !!bad('tokenFromSecret.name', 'expected a Secret name (lowercase letters, digits, "-" and ".")');
  if (typeof key !== 'string' || !SECRET_KEY.test(key)) ok = !!bad('tokenFromSecret.key', 'expected a key of the Secret (letters, digits, "-", "_" and ".")');
  if (namespace !== undefined && (typeof namespace !== 'string' || !SECRET_NAME.test(namespace))) ok = !!bad('tokenFromSecret.namespace', 'expected a namespace name');
  if (!ok) return undefined;
  return namespace === undefined ? { name: name as string, key: key as string } : { name: name as string, key: key as string, namespace: namespace as string };
}

function unknownKeys(value: Record<string, unknown>, known: string[], prefix: string, bad: (field: string, message: string) => undefined): void {
  for (const key of Object.keys(value)) if (!known.includes(key)) bad(`${prefix}${key}`, `unknown field (expected one of ${known.join(', ')})`);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export class ImmutableFieldError extends Error {
  constructor(readonly fields: string[]) {
    super(`IMMUTABLE_FIELD: ${fields.join(', ')} cannot change once the artifact exists; create a new artifact instead`);
    this.name = 'ImmutableFieldError';
  }
}

/** Throws ImmutableFieldError naming each field an update would change. */
export function assertSpecUnchanged(current: ModelArtifactSpec, next: ModelArtifactSpec): void {
  const changed: string[] = [];
  const same = (a: unknown, b: unknown): boolean => JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
  for (const key of Object.keys({ ...current.source, ...next.source }) as (keyof ArtifactSource)[]) {
    if (!same((current.source as Record<string, unknown>)[key], (next.source as Record<string, unknown>)[key])) changed.push(`source.${key}`);
  }
  for (const key of ['revision', 'allowPatterns', 'ignorePatterns', 'expectedDigest', 'tokenFromSecret'] as const) {
    if (!same(current[key], next[key])) changed.push(key);
  }
  if (changed.length > 0) throw new ImmutableFieldError(changed);
}

function canonical(value: unknown): unknown {
  if (!isRecord(value)) return value;
  return Object.fromEntries(Object.keys(value).sort().map((k) => [k, value[k]]));
}
