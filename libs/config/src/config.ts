import { inspect } from 'node:util';
import { FieldParseError, type FieldSpec } from './fields';

export type ConfigFields = Record<string, FieldSpec<unknown>>;

export interface ConfigSchema<F extends ConfigFields = ConfigFields> {
  readonly fields: F;
  /** Rules between variables, run once every field is valid: each returns the problems it finds. */
  readonly checks: ReadonlyArray<(config: ConfigOf<F>) => readonly ConfigProblem[]>;
}

/** The loaded config type of a set of fields. */
export type ConfigOf<F extends ConfigFields> = {
  readonly [K in keyof F]: F[K] extends FieldSpec<infer T> ? T : never;
};

/** The loaded config type of a schema: `type SchedulerConfig = InferConfig<typeof schedulerSchema>`. */
export type InferConfig<S> = S extends ConfigSchema<infer F> ? ConfigOf<F> : never;

/** Shown instead of a secret value. */
export const REDACTED = '[REDACTED]';

const VARIABLE_NAME = /^[A-Z][A-Z0-9_]*$/;

/**
 * Declares a service's configuration: one field per environment variable.
 * Spread the shared fields in: `defineConfig({ ...sharedConfigFields, NOT_READY_TIMEOUT_S: duration({...}) })`.
 */
export function defineConfig<const F extends ConfigFields>(
  fields: F,
  checks: ReadonlyArray<(config: ConfigOf<F>) => readonly ConfigProblem[]> = [],
): ConfigSchema<F> {
  for (const [name, spec] of Object.entries(fields)) {
    if (!VARIABLE_NAME.test(name)) {
      throw new Error(`defineConfig: "${name}" is not an environment variable name (UPPER_SNAKE_CASE)`);
    }
    for (const other of [...spec.requires, ...spec.conflicts]) {
      if (!(other in fields)) throw new Error(`defineConfig: ${name} refers to ${other}, which is not in the schema`);
    }
  }
  return Object.freeze({ fields: Object.freeze({ ...fields }), checks: Object.freeze([...checks]) });
}

/** One bad variable. */
export interface ConfigProblem {
  readonly variable: string;
  /** The sentence after `VARIABLE: `. */
  readonly message: string;
}

/**
 * Thrown by `loadConfig` with every bad variable, one per line:
 * `INVALID_CONFIG: 2 environment variables are invalid:\n  GRPC_PORT: expected an integer 1-65535, got "abc"\n  …`.
 */
export class ConfigError extends Error {
  readonly reason = 'INVALID_CONFIG';

  constructor(readonly problems: readonly ConfigProblem[]) {
    const count = new Set(problems.map((p) => p.variable)).size;
    super(
      `INVALID_CONFIG: ${count} environment variable${count === 1 ? ' is' : 's are'} invalid:\n` +
        problems.map((p) => `  ${p.variable}: ${p.message}`).join('\n'),
    );
    this.name = 'ConfigError';
  }
}

// A field is treated as secret when declared so, or when its name says so and it is not a path:
// a forgotten `secret: true` on REDIS_PASSWORD must still not end up in a log.
// Whole words of the name, so MAX_TOKENS or RANDOM_SEED_VALUE-like settings stay visible while
// NATS_TOKEN, ADMIN_TOKEN, DB_PASSWORD, NKEY_SEED are hidden.
const SECRET_NAME = /(^|_)(PASSWORD|PASSWD|TOKEN|SECRET|API_?KEY|PRIVATE_KEY|NKEY_SEED|CREDENTIALS?)$/i;
const PATH_NAME = /_(FILE|PATH|DIR)$/i;

export function isSecretField(name: string, spec?: FieldSpec<unknown>): boolean {
  if (spec?.secret === true) return true;
  if (spec?.notSecret === true) return false;
  return SECRET_NAME.test(name) && !PATH_NAME.test(name);
}

// `scheme://user:password@host`: the password part of a URL's userinfo.
const URL_PASSWORD = /^([a-z][a-z0-9+.-]*:\/\/[^/@:\s]*:)([^/@\s]+)(@)/i;

/**
 * A value with the password of any URL it holds replaced by [REDACTED]: `nats://svc:s3cret@n1`
 * → `nats://svc:[REDACTED]@n1`. NATS_URL and REDIS_URL are not secrets, but they may carry one.
 */
export function redactUrlPasswords<T>(value: T): T {
  if (typeof value === 'string') return value.replace(URL_PASSWORD, `$1${REDACTED}$3`) as T;
  if (Array.isArray(value)) return value.map((v) => redactUrlPasswords(v)) as T;
  return value;
}

const schemas = new WeakMap<object, ConfigFields>();

function show(raw: string, secret: boolean): string {
  if (secret) return `a secret value of ${raw.length} characters`;
  const quoted = JSON.stringify(redactUrlPasswords(raw));
  return quoted.length > 120 ? `${quoted.slice(0, 117)}…"` : quoted;
}

function deepFreeze<T>(value: T): T {
  if (Array.isArray(value)) {
    value.forEach(deepFreeze);
    return Object.freeze(value);
  }
  return value;
}

/**
 * Reads and validates every field from `env` (default `process.env`). Unset and empty
 * (whitespace-only) values count as unset; values are trimmed before parsing.
 * Returns a frozen, typed object whose `JSON.stringify` and `util.inspect` redact secrets.
 * Throws `ConfigError` naming every bad variable at once.
 */
export function loadConfig<F extends ConfigFields>(
  schema: ConfigSchema<F>,
  env: Readonly<Record<string, string | undefined>> = process.env,
): ConfigOf<F> {
  const problems: ConfigProblem[] = [];
  const values: Record<string, unknown> = {};

  for (const [name, spec] of Object.entries(schema.fields)) {
    const raw = env[name]?.trim();
    if (raw === undefined || raw === '') {
      if (spec.hasDefault) {
        const fallback = spec.defaultValue;
        values[name] = Array.isArray(fallback) ? [...fallback] : fallback;
      } else if (spec.required) {
        problems.push({ variable: name, message: `required but not set; expected ${spec.expected}` });
      } else {
        values[name] = undefined;
      }
      continue;
    }
    try {
      values[name] = spec.parse(raw);
    } catch (error) {
      const secret = isSecretField(name, spec);
      if (!(error instanceof FieldParseError)) throw error;
      // A secret's detail could quote it (a list item), so it is left out.
      const detail = error.detail && !secret ? ` (${error.detail})` : '';
      problems.push({ variable: name, message: `expected ${error.expected}, got ${show(raw, secret)}${detail}` });
    }
  }

  const isSet = (name: string): boolean => values[name] !== undefined;
  const failed = new Set(problems.map((p) => p.variable));
  for (const [name, spec] of Object.entries(schema.fields)) {
    if (!isSet(name) || failed.has(name)) continue;
    for (const needed of spec.requires) {
      if (!isSet(needed) && !failed.has(needed)) {
        problems.push({ variable: name, message: `is set, so ${needed} must be set too` });
      }
    }
    for (const other of spec.conflicts) {
      if (isSet(other)) problems.push({ variable: name, message: `must not be set together with ${other}` });
    }
  }

  if (problems.length > 0) throw new ConfigError(problems);
  for (const check of schema.checks ?? []) problems.push(...check(values as ConfigOf<F>));
  if (problems.length > 0) throw new ConfigError(problems);

  for (const value of Object.values(values)) deepFreeze(value);
  const config = values;
  Object.defineProperty(config, 'toJSON', { value: () => redactConfig(config), enumerable: false });
  Object.defineProperty(config, inspect.custom, { value: () => redactConfig(config), enumerable: false });
  schemas.set(config, schema.fields);
  return Object.freeze(config) as ConfigOf<F>;
}

export type Redacted<C> = { [K in keyof C]: C[K] | typeof REDACTED };

/**
 * A copy of `config` safe to print or log: every secret that is set becomes `[REDACTED]`.
 * Works on objects from `loadConfig` (uses the schema's `secret` marks) and, by variable
 * names alone, on any other flat object.
 */
export function redactConfig<C extends object>(config: C): Redacted<C> {
  const fields = schemas.get(config);
  const copy: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(config)) {
    copy[name] = value !== undefined && isSecretField(name, fields?.[name]) ? REDACTED : redactUrlPasswords(value);
  }
  return copy as Redacted<C>;
}

export interface LoadOrExitOptions {
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Where the message goes (default stderr). */
  readonly write?: (text: string) => void;
  /** Default `process.exit`. */
  readonly exit?: (code: number) => never;
}

/** Exit status for a configuration error (sysexits EX_CONFIG). */
export const EXIT_CONFIG = 78;

/**
 * For `main.ts`: `loadConfig`, or print the `ConfigError` (every bad variable) and exit 78.
 * Other errors propagate.
 */
export function loadConfigOrExit<F extends ConfigFields>(
  schema: ConfigSchema<F>,
  options: LoadOrExitOptions = {},
): ConfigOf<F> {
  try {
    return loadConfig(schema, options.env ?? process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    (options.write ?? ((text: string) => process.stderr.write(text)))(`${error.message}\n`);
    return (options.exit ?? ((code: number) => process.exit(code)))(EXIT_CONFIG);
  }
}
