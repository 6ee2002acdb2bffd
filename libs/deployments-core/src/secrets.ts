/**
 * Secrets and the environment variables that refer to them: validation of a Secret's data, of
 * `env_from_secret` next to `env`, how layered environments (a deployment's engine, then its
 * role) combine, and what the API may show of a Secret (its metadata and key names, never a value).
 */
import type { Secret, SecretKeyRef, SecretMetadata } from '@gpufleet/contracts';
import { checkDns1123Label, problem, shown, type ValidationProblem } from '@gpufleet/scheduling-core';
import { DEVICE_VISIBILITY_ENV, LIMITS } from './limits';

export const SECRET_LIMITS = {
  /** Keys of one Secret. */
  keys: 64,
  /** Characters of one key (Kubernetes's bound for Secret keys). */
  key: 253,
  /** Bytes (UTF-8) of keys and values together: a Secret is a few tokens, not a file store. */
  totalBytes: 64 * 1024,
} as const;

/**
 * Revisions the secrets bucket keeps per key, for every opener (the scheduler writes it, node
 * runtimes read it; whoever opens it first creates it): one, so a replaced or deleted value does
 * not stay behind in the bucket's history.
 */
export const SECRETS_BUCKET_HISTORY = 1;

/** A Secret's keys: what Kubernetes allows in a Secret key. */
const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `secret:NAME/KEY`: how a reference is shown wherever a value would be (CLI output, docs). */
export function describeSecretRef(ref: Pick<SecretKeyRef, 'name' | 'key'>): string {
  return `secret:${ref.name}/${ref.key}`;
}

export function checkSecretKey(field: string, key: string): ValidationProblem | undefined {
  if (key.length === 0 || key.length > SECRET_LIMITS.key || !SECRET_KEY.test(key) || key === '.' || key === '..') {
    return problem(field, `a key of 1-${SECRET_LIMITS.key} letters, digits, "-", "_" and "." (not "." or "..")`, key === '' ? 'an empty string' : shown(key));
  }
  return undefined;
}

/** Bytes of a Secret's keys and values together, as SECRET_LIMITS.totalBytes counts them. */
export function secretSize(data: Readonly<Record<string, string>>): number {
  let total = 0;
  for (const [key, value] of Object.entries(data)) total += Buffer.byteLength(key, 'utf8') + Buffer.byteLength(value, 'utf8');
  return total;
}

/** Every problem of a PutSecret request, each naming its field; values are never quoted. */
export function validateSecret(namespace: string, name: string, data: Readonly<Record<string, string>>): ValidationProblem[] {
  const problems: ValidationProblem[] = [];
  const add = (p: ValidationProblem | undefined): void => {
    if (p) problems.push(p);
  };
  add(checkDns1123Label('namespace', namespace));
  add(checkDns1123Label('name', name));
  const entries = Object.entries(data);
  if (entries.length === 0) add(problem('data', 'at least one key', 'none'));
  if (entries.length > SECRET_LIMITS.keys) add(problem('data', `at most ${SECRET_LIMITS.keys} keys`, `${entries.length}`));
  for (const [key, value] of entries) {
    const bad = checkSecretKey('data', key);
    if (bad) add(bad);
    // An environment variable cannot hold NUL; the value itself is never shown.
    else if (value.includes('\0')) add(problem(`data["${key}"]`, 'a value without NUL characters (it becomes an environment variable)', 'a NUL character'));
  }
  const size = secretSize(data);
  if (size > SECRET_LIMITS.totalBytes) add(problem('data', `at most ${SECRET_LIMITS.totalBytes / 1024} KiB of keys and values in all`, `${Math.ceil(size / 1024)} KiB`));
  return problems;
}

/** What GetSecret and ListSecrets return: the Secret without its values. */
export function secretMetadata(secret: Secret): SecretMetadata {
  return {
    name: secret.name,
    namespace: secret.namespace,
    keys: Object.keys(secret.data).sort(),
    createdAt: secret.createdAt,
    updatedAt: secret.updatedAt,
    generation: secret.generation,
    sizeBytes: secretSize(secret.data),
  };
}

/**
 * Problems of `envFromSecret` beside `env` at `field` (e.g. "roles[0]" → "roles[0].envFromSecret.HF_TOKEN"):
 * variable names, a reference that names a Secret and a key, and no variable in both maps.
 */
export function checkEnvFromSecret(
  field: string,
  env: Readonly<Record<string, string>>,
  envFromSecret: Readonly<Record<string, SecretKeyRef>>,
): ValidationProblem[] {
  const problems: ValidationProblem[] = [];
  const at = (name: string) => `${field ? `${field}.` : ''}envFromSecret.${name}`;
  const entries = Object.entries(envFromSecret);
  if (entries.length > 0 && entries.length + Object.keys(env).length > LIMITS.env) {
    problems.push(problem(`${field ? `${field}.` : ''}envFromSecret`, `at most ${LIMITS.env} variables in env and envFromSecret together`, `${entries.length + Object.keys(env).length}`));
  }
  for (const [name, ref] of entries) {
    if (!ENV_NAME.test(name)) {
      problems.push(problem(`${field ? `${field}.` : ''}envFromSecret`, 'environment variable names of letters, digits and "_"', shown(name)));
      continue;
    }
    if (Object.prototype.hasOwnProperty.call(env, name)) {
      problems.push(problem(at(name), `a variable in env or envFromSecret, not both`, 'both'));
    }
    if (DEVICE_VISIBILITY_ENV.includes(name)) problems.push(problem(at(name), 'not set: the runtime sets it to the allocated devices', describeSecretRef(ref ?? { name: '', key: '' })));
    const secretName = checkDns1123Label(`${at(name)}.name`, ref?.name ?? '');
    if (secretName) problems.push({ ...secretName, expected: `the name of a Secret of the namespace (${secretName.expected})`, message: `${secretName.field}: expected the name of a Secret of the namespace (${secretName.expected}), got ${secretName.got}` });
    const key = checkSecretKey(`${at(name)}.key`, ref?.key ?? '');
    if (key) problems.push(key);
  }
  return problems;
}

/** One level of an environment: plain values and references to Secrets. */
export interface EnvLayer {
  readonly env: Readonly<Record<string, string>>;
  readonly envFromSecret: Readonly<Record<string, SecretKeyRef>>;
}

/**
 * `over` on top of `base`: a variable `over` sets, by value or by reference, replaces the one
 * of `base` in either form (a role's plain HF_TOKEN wins over the engine's reference).
 */
export function layerEnv(base: EnvLayer, over: Partial<EnvLayer>): { env: Record<string, string>; envFromSecret: Record<string, SecretKeyRef> } {
  const overEnv = over.env ?? {};
  const overRefs = over.envFromSecret ?? {};
  const env: Record<string, string> = {};
  const envFromSecret: Record<string, SecretKeyRef> = {};
  for (const [name, value] of Object.entries(base.env)) if (!(name in overRefs)) env[name] = value;
  for (const [name, ref] of Object.entries(base.envFromSecret)) if (!(name in overEnv)) envFromSecret[name] = ref;
  Object.assign(env, overEnv);
  Object.assign(envFromSecret, overRefs);
  return { env, envFromSecret };
}
