/**
 * A rejected routing configuration value. `field` is the dotted path the operator wrote
 * (`cache_aware.cacheThreshold`), so the message can be acted on without reading the code.
 */
export class RoutingConfigError extends Error {
  override readonly name = 'RoutingConfigError';

  constructor(
    readonly field: string,
    readonly expected: string,
    /** What was there instead, as words: `shown(value)`, or `an unknown option`. */
    readonly got: string,
  ) {
    super(`INVALID_ARGUMENT: ${field}: expected ${expected}, got ${got}`);
  }
}

/** A value as it appears in an error message; long strings are cut so a message stays one line. */
export function shown(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}

/** `value` unless it is not a number in [min, max]. */
export function checkNumber(field: string, value: unknown, min: number, max: number): number {
  if (typeof value === 'number' && Number.isFinite(value) && value >= min && value <= max) return value;
  const range = max === Infinity ? `a number ≥ ${min}` : `a number from ${min} to ${max}`;
  throw new RoutingConfigError(field, range, shown(value));
}

/** `value` unless it is not an integer in [min, max]. */
export function checkInteger(field: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max) return value;
  const range = max === Number.MAX_SAFE_INTEGER ? `an integer ≥ ${min}` : `an integer from ${min} to ${max}`;
  throw new RoutingConfigError(field, range, shown(value));
}
