import { problem, shown, ValidationProblem } from './problems';

const DNS_1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_1123_LABEL_MAX = 63;

export function isDns1123Label(value: string): boolean {
  return value.length <= DNS_1123_LABEL_MAX && DNS_1123_LABEL.test(value);
}

const LABEL_RULE = "a DNS-1123 label (lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)";

/** Problem for `field` unless `value` is a DNS-1123 label (Kubernetes object and namespace names). */
export function checkDns1123Label(field: string, value: string | undefined): ValidationProblem | undefined {
  if (typeof value === 'string' && isDns1123Label(value)) return undefined;
  return problem(field, LABEL_RULE, value === '' ? 'an empty string' : shown(value));
}

/** Problem for `field` unless `value` is an integer in [min, max]. */
export function checkIntegerRange(
  field: string,
  value: number | undefined,
  min: number,
  max: number,
  /** Why the bounds are what they are; a function when building the sentence costs (admission's hot path). */
  why: string | (() => string) = '',
): ValidationProblem | undefined {
  if (typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max) return undefined;
  const range = max === Number.MAX_SAFE_INTEGER ? `an integer ≥ ${min}` : `an integer from ${min} to ${max}`;
  const reason = typeof why === 'function' ? why() : why;
  return problem(field, reason === '' ? range : `${range} (${reason})`, shown(value));
}
