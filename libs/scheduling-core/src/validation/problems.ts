/**
 * A validation problem names the field (a path into the object, e.g.
 * `podSets[1].resources.accelerator.slice.memoryMib`), what was expected and what was given, so
 * the user can fix the request without reading the code.
 */
export interface ValidationProblem {
  readonly field: string;
  readonly expected: string;
  readonly got: string;
  /** `field: expected …, got …` */
  readonly message: string;
}

export function problem(field: string, expected: string, got: string): ValidationProblem {
  return { field, expected, got, message: `${field}: expected ${expected}, got ${got}` };
}

/** One line per problem, for an INVALID_ARGUMENT error. */
export function describeProblems(problems: readonly ValidationProblem[]): string {
  return problems.map((p) => p.message).join('; ');
}

/** A value as a user wrote it: strings quoted (a long one cut to its start and its length), absent values named. */
export function shown(value: unknown): string {
  if (value === undefined) return 'none';
  if (typeof value === 'string') return value.length > 100 ? `${JSON.stringify(value.slice(0, 64))}… (${value.length} characters)` : JSON.stringify(value);
  return String(value);
}

/** Credits and other large counts with thousands separators: 1,600,000. */
export function formatCount(value: number): string {
  return value.toLocaleString('en-US');
}
