import { accessSync, constants, statSync } from 'node:fs';

/**
 * A parse failure of one raw value. `expected` completes the sentence
 * "VARIABLE: expected …" and `detail` (optional) says what exactly was wrong.
 */
export class FieldParseError extends Error {
  constructor(
    readonly expected: string,
    readonly detail?: string,
  ) {
    super(detail ? `expected ${expected} (${detail})` : `expected ${expected}`);
    this.name = 'FieldParseError';
  }
}

/**
 * How one environment variable is read. `T` is the type it has in the loaded config:
 * `T | undefined` for optional variables without a default.
 */
export interface FieldSpec<T> {
  /** Short type for documentation, e.g. `integer 1-65535`, `list of URL (nats, tls)`. */
  readonly type: string;
  /** Completes "expected …" in error messages, e.g. `an integer 1-65535`. */
  readonly expected: string;
  readonly description: string;
  /** Used when the variable is unset or empty. */
  readonly defaultValue: T | undefined;
  readonly hasDefault: boolean;
  /** Unset, empty and without a default is an error. */
  readonly required: boolean;
  /** Never printed: redacted by `redactConfig`, `JSON.stringify(config)` and in error messages. */
  readonly secret: boolean;
  /** Declared `secret: false`: shown even when its name looks like a credential's (`…_PER_TOKEN`). */
  readonly notSecret: boolean;
  /** When this variable is set, these must be set too (e.g. a TLS key requires its certificate). */
  readonly requires: readonly string[];
  /** When this variable is set, these must not be (e.g. two ways to authenticate). */
  readonly conflicts: readonly string[];
  /** Parses a non-empty raw value; throws `FieldParseError`. */
  parse(raw: string): Exclude<T, undefined>;
}

/** Options every field helper takes. */
export interface CommonOptions {
  /** One sentence for operators; rendered in the generated docs. */
  readonly desc: string;
  /** Unset is allowed and yields `undefined` (ignored when a default is given). */
  readonly optional?: boolean;
  /** true: the value is a credential, never printed or logged. false: it is not, whatever its name says. */
  readonly secret?: boolean;
  /** Variables that must also be set when this one is. */
  readonly requires?: readonly string[];
  /** Variables that must not be set together with this one. */
  readonly conflicts?: readonly string[];
}

/** `T` when there is a default or the field is required, `T | undefined` when optional. */
export type Resolved<T, O> = O extends { readonly default: unknown }
  ? T
  : O extends { readonly optional: true }
    ? T | undefined
    : T;

function makeSpec<T, O extends CommonOptions & { readonly default?: unknown }>(
  options: O,
  shape: { type: string; expected: string; parse(raw: string): T },
): FieldSpec<Resolved<T, O>> {
  const hasDefault = options.default !== undefined;
  return Object.freeze({
    type: shape.type,
    expected: shape.expected,
    description: options.desc,
    defaultValue: options.default as Resolved<T, O> | undefined,
    hasDefault,
    required: !hasDefault && options.optional !== true,
    secret: options.secret === true,
    notSecret: options.secret === false,
    requires: Object.freeze([...(options.requires ?? [])]),
    conflicts: Object.freeze([...(options.conflicts ?? [])]),
    parse: shape.parse as (raw: string) => Exclude<Resolved<T, O>, undefined>,
  });
}

// ---------------------------------------------------------------- str

export interface StrOptions extends CommonOptions {
  readonly default?: string;
  /** Allowed values (case-sensitive). */
  readonly choices?: readonly string[];
  /** The value must match this (anchor it yourself). */
  readonly pattern?: RegExp;
  /** Completes "expected …" when `pattern` does not match, e.g. `a lower-case token`. */
  readonly patternDesc?: string;
}

type StrValue<O> = O extends { readonly choices: readonly (infer C extends string)[] } ? C : string;

export function str<const O extends StrOptions>(options: O): FieldSpec<Resolved<StrValue<O>, O>> {
  const choices = options.choices;
  if (choices && options.default !== undefined && !choices.includes(options.default)) {
    throw new Error(`str(): default "${options.default}" is not one of ${choices.join(', ')}`);
  }
  const expected = choices
    ? `one of ${choices.join(', ')}`
    : options.pattern
      ? (options.patternDesc ?? `a string matching ${String(options.pattern)}`)
      : 'a string';
  return makeSpec(options, {
    type: choices ? choices.join(' | ') : 'string',
    expected,
    parse(raw: string): StrValue<O> {
      if (choices && !choices.includes(raw)) throw new FieldParseError(expected);
      if (options.pattern && !options.pattern.test(raw)) throw new FieldParseError(expected);
      return raw as StrValue<O>;
    },
  });
}

// ---------------------------------------------------------------- int / port

export interface IntOptions extends CommonOptions {
  readonly default?: number;
  readonly min?: number;
  readonly max?: number;
}

function rangeText(min: number | undefined, max: number | undefined): string {
  if (min !== undefined && max !== undefined) return `${min}-${max}`;
  if (min !== undefined) return `>= ${min}`;
  if (max !== undefined) return `<= ${max}`;
  return '';
}

export function int<const O extends IntOptions>(options: O): FieldSpec<Resolved<number, O>> {
  const range = rangeText(options.min, options.max);
  const expected = range ? `an integer ${range}` : 'an integer';
  return makeSpec(options, {
    type: range ? `integer ${range}` : 'integer',
    expected,
    parse(raw: string): number {
      if (!/^[+-]?\d+$/.test(raw)) throw new FieldParseError(expected);
      const value = Number(raw);
      if (!Number.isSafeInteger(value)) throw new FieldParseError(expected);
      if (options.min !== undefined && value < options.min) throw new FieldParseError(expected);
      if (options.max !== undefined && value > options.max) throw new FieldParseError(expected);
      return value;
    },
  });
}

export type PortOptions = CommonOptions & { readonly default?: number };

/** A TCP port, 1-65535. */
export function port<const O extends PortOptions>(options: O): FieldSpec<Resolved<number, O>> {
  return int({ ...options, min: 1, max: 65535 }) as FieldSpec<Resolved<number, O>>;
}

// ---------------------------------------------------------------- bool

export interface BoolOptions extends CommonOptions {
  readonly default?: boolean;
}

const TRUE_WORDS = new Set(['true', '1', 'yes', 'on']);
const FALSE_WORDS = new Set(['false', '0', 'no', 'off']);

/** true/false, 1/0, yes/no, on/off (any case). */
export function bool<const O extends BoolOptions>(options: O): FieldSpec<Resolved<boolean, O>> {
  const expected = 'a boolean (true/false, 1/0, yes/no, on/off)';
  return makeSpec(options, {
    type: 'boolean',
    expected,
    parse(raw: string): boolean {
      const word = raw.toLowerCase();
      if (TRUE_WORDS.has(word)) return true;
      if (FALSE_WORDS.has(word)) return false;
      throw new FieldParseError(expected);
    },
  });
}

// ---------------------------------------------------------------- url

export interface UrlOptions extends CommonOptions {
  readonly default?: string;
  /** Allowed schemes without `:` or `//`, e.g. `['nats', 'tls']`. Any scheme when omitted. */
  readonly protocols?: readonly string[];
}

/** An absolute URL; the value is kept as written (not normalised). */
export function url<const O extends UrlOptions>(options: O): FieldSpec<Resolved<string, O>> {
  const protocols = options.protocols;
  const expected = protocols ? `a ${protocols.map((p) => `${p}://`).join(' or ')} URL` : 'an absolute URL';
  return makeSpec(options, {
    type: protocols ? `URL (${protocols.join(', ')})` : 'URL',
    expected,
    parse(raw: string): string {
      let parsed: URL;
      try {
        parsed = new URL(raw);
      } catch {
        throw new FieldParseError(expected);
      }
      const scheme = parsed.protocol.replace(/:$/, '');
      if (protocols && !protocols.includes(scheme)) {
        throw new FieldParseError(expected, `scheme "${scheme}" is not allowed`);
      }
      if (!parsed.host && ['http', 'https', 'nats', 'tls', 'redis', 'rediss', 'grpc', 'ws', 'wss'].includes(scheme)) {
        throw new FieldParseError(expected, 'no host');
      }
      return raw;
    },
  });
}

// ---------------------------------------------------------------- duration

export interface DurationOptions extends CommonOptions {
  /** Seconds. */
  readonly default?: number;
  /** Seconds. */
  readonly min?: number;
  /** Seconds. */
  readonly max?: number;
}

const UNIT_SECONDS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600 };

/**
 * A duration, loaded as seconds (name such variables `*_S`). A bare number is seconds;
 * `500ms`, `30s`, `5m`, `1h` are accepted too.
 */
export function duration<const O extends DurationOptions>(options: O): FieldSpec<Resolved<number, O>> {
  const range = rangeText(options.min, options.max);
  const expected = `a duration in seconds${range ? ` ${range}` : ''} (e.g. 30, 1.5, 500ms, 5m, 1h)`;
  return makeSpec(options, {
    type: `duration (s)${range ? ` ${range}` : ''}`,
    expected,
    parse(raw: string): number {
      const match = /^(\d+(?:\.\d+)?|\.\d+)\s*(ms|s|m|h)?$/.exec(raw);
      if (!match) throw new FieldParseError(expected);
      const seconds = Number(match[1]) * UNIT_SECONDS[match[2] ?? 's'];
      if (options.min !== undefined && seconds < options.min) throw new FieldParseError(expected);
      if (options.max !== undefined && seconds > options.max) throw new FieldParseError(expected);
      return seconds;
    },
  });
}

// ---------------------------------------------------------------- file

export interface FileOptions extends CommonOptions {
  readonly default?: string;
  /** Check at load time that the path is a readable regular file (default true). */
  readonly mustExist?: boolean;
}

/** A file path, checked to be a readable file when the config is loaded. */
export function file<const O extends FileOptions>(options: O): FieldSpec<Resolved<string, O>> {
  const mustExist = options.mustExist !== false;
  const expected = mustExist ? 'a readable file' : 'a file path';
  return makeSpec(options, {
    type: 'file path',
    expected,
    parse(raw: string): string {
      if (!mustExist) return raw;
      try {
        if (!statSync(raw).isFile()) throw new FieldParseError(expected, 'not a regular file');
        accessSync(raw, constants.R_OK);
      } catch (error) {
        if (error instanceof FieldParseError) throw error;
        const code = (error as NodeJS.ErrnoException).code;
        throw new FieldParseError(expected, code === 'ENOENT' ? 'no such file' : (code ?? 'unreadable'));
      }
      return raw;
    },
  });
}

// ---------------------------------------------------------------- list

export interface ListOptions extends CommonOptions {
  readonly default?: readonly unknown[];
  /** How each comma-separated item is parsed (its own desc/default are ignored); plain strings when omitted. */
  readonly of?: FieldSpec<unknown>;
  /** At least this many items (default 1 when the variable is set). */
  readonly minItems?: number;
}

type ListItem<O> = O extends { readonly of: FieldSpec<infer T> } ? Exclude<T, undefined> : string;

/**
 * A comma-separated list; items are trimmed and empty items dropped. Loaded as a frozen array
 * (typed as a plain array so it can be handed to client options such as nats.js `servers`).
 */
export function list<const O extends ListOptions>(options: O): FieldSpec<Resolved<ListItem<O>[], O>> {
  const item = options.of;
  const minItems = options.minItems ?? 1;
  const expected = `a comma-separated list of ${item ? item.type : 'strings'}`;
  return makeSpec(options, {
    type: `list of ${item ? item.type : 'string'}`,
    expected,
    parse(raw: string): ListItem<O>[] {
      const items = raw
        .split(',')
        .map((part) => part.trim())
        .filter((part) => part.length > 0);
      if (items.length < minItems) throw new FieldParseError(expected, `at least ${minItems} item(s)`);
      return items.map((part, index) => {
        if (!item) return part as ListItem<O>;
        try {
          return item.parse(part) as ListItem<O>;
        } catch (error) {
          const inner = error instanceof FieldParseError ? error : new FieldParseError(String(error));
          const why = inner.detail ? `${inner.expected}; ${inner.detail}` : inner.expected;
          throw new FieldParseError(expected, `item ${index + 1}: expected ${why}`);
        }
      });
    },
  });
}
