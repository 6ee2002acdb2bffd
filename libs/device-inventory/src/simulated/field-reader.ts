/** One problem in a fleet file, at a field path such as `nodes[2].accelerators.count`. */
export interface FleetIssue {
  path: string;
  message: string;
}

/** A fleet file that cannot be used; lists every problem found, each naming its field. */
export class FleetFileError extends Error {
  constructor(
    readonly issues: FleetIssue[],
    readonly source = 'fleet file',
  ) {
    super(`INVALID_FLEET_FILE: ${source} has ${issues.length} problem(s):\n${issues.map((i) => `  ${i.path}: ${i.message}`).join('\n')}`);
    this.name = 'FleetFileError';
  }
}

export class Issues {
  readonly list: FleetIssue[] = [];
  add(path: string, message: string): void {
    this.list.push({ path, message });
  }
  expected(path: string, what: string, got: unknown): void {
    this.add(path, `expected ${what}, got ${describeValue(got)}`);
  }
}

/** How a YAML value is shown in messages: scalars as JSON, containers by kind. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return JSON.stringify(value);
}

export function childPath(parent: string, key: string | number): string {
  if (typeof key === 'number') return `${parent}[${key}]`;
  // Plain keys (and numeric mapping keys such as a GPU index) read as `a.b`; others are quoted.
  const plain = /^([A-Za-z_][A-Za-z0-9_]*|\d+)$/.test(key);
  if (!parent) return plain ? key : JSON.stringify(key);
  return plain ? `${parent}.${key}` : `${parent}[${JSON.stringify(key)}]`;
}

export function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Typed, path-aware access to one YAML mapping. Every getter records a precise issue and
 * returns undefined on a bad value, so one pass reports every problem in the file.
 */
export class FieldReader {
  constructor(
    private readonly raw: Record<string, unknown>,
    readonly path: string,
    readonly issues: Issues,
    allowed: readonly string[],
  ) {
    for (const key of Object.keys(raw)) {
      if (!allowed.includes(key)) {
        this.issues.add(childPath(path, key), `unknown field; expected one of ${allowed.join(', ')}`);
      }
    }
  }

  /** A mapping at `path`, or undefined (with an issue) when it is something else. */
  static of(value: unknown, path: string, issues: Issues, allowed: readonly string[]): FieldReader | undefined {
    if (!isMapping(value)) {
      issues.expected(path, 'a mapping', value);
      return undefined;
    }
    return new FieldReader(value, path, issues, allowed);
  }

  at(key: string): string {
    return childPath(this.path, key);
  }

  has(key: string): boolean {
    return this.raw[key] !== undefined && this.raw[key] !== null;
  }

  value(key: string): unknown {
    return this.raw[key];
  }

  required(key: string, what: string): void {
    if (!this.has(key)) this.issues.expected(this.at(key), what, undefined);
  }

  string(key: string, what = 'a string'): string | undefined {
    const v = this.raw[key];
    if (v === undefined || v === null) return undefined;
    // YAML reads `12.4` or `22.04` as numbers; versions and names are meant as text.
    if (typeof v === 'number') return String(v);
    if (typeof v !== 'string' || v.trim() === '') {
      this.issues.expected(this.at(key), what, v);
      return undefined;
    }
    return v.trim();
  }

  integer(key: string, min: number, what: string): number | undefined {
    const v = this.raw[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min) {
      this.issues.expected(this.at(key), what, v);
      return undefined;
    }
    return v;
  }

  positiveInteger(key: string): number | undefined {
    return this.integer(key, 1, 'a positive integer');
  }

  nonNegativeInteger(key: string): number | undefined {
    return this.integer(key, 0, 'a non-negative integer');
  }

  positiveNumber(key: string): number | undefined {
    const v = this.raw[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
      this.issues.expected(this.at(key), 'a positive number', v);
      return undefined;
    }
    return v;
  }

  boolean(key: string): boolean | undefined {
    const v = this.raw[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'boolean') {
      this.issues.expected(this.at(key), 'true or false', v);
      return undefined;
    }
    return v;
  }

  /** A string matched case-insensitively against `choices` (keys), returning the mapped value. */
  oneOf<T>(key: string, choices: Record<string, T>): T | undefined {
    const v = this.raw[key];
    if (v === undefined || v === null) return undefined;
    const hit = typeof v === 'string' ? choices[v.trim().toLowerCase()] : undefined;
    if (hit === undefined) {
      this.issues.expected(this.at(key), `one of ${Object.keys(choices).join(', ')}`, v);
      return undefined;
    }
    return hit;
  }

  mapping(key: string, allowed: readonly string[]): FieldReader | undefined {
    const v = this.raw[key];
    if (v === undefined || v === null) return undefined;
    return FieldReader.of(v, this.at(key), this.issues, allowed);
  }

  list(key: string): unknown[] | undefined {
    const v = this.raw[key];
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v)) {
      this.issues.expected(this.at(key), 'a list', v);
      return undefined;
    }
    return v;
  }

  /** A mapping of string keys to scalar values, e.g. labels. */
  stringMap(key: string): Record<string, string> | undefined {
    const v = this.raw[key];
    if (v === undefined || v === null) return undefined;
    if (!isMapping(v)) {
      this.issues.expected(this.at(key), 'a mapping of names to values', v);
      return undefined;
    }
    const out: Record<string, string> = {};
    for (const [k, value] of Object.entries(v)) {
      if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
        out[k] = String(value);
      } else {
        this.issues.expected(childPath(this.at(key), k), 'a string', value);
      }
    }
    return out;
  }
}
