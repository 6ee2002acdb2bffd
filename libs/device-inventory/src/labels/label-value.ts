/** Kubernetes label values: at most 63 characters of [A-Za-z0-9._-], starting and ending alphanumeric. */
export const MAX_LABEL_VALUE_LENGTH = 63;

/**
 * Makes any string a valid label value the way GPU Feature Discovery does for product names:
 * whitespace becomes `separator` ("-" for NVIDIA, "_" for the AMD labeller), other invalid
 * characters become "-", runs collapse, the result is cut to 63 characters and trimmed to
 * alphanumeric ends. "NVIDIA H100 80GB HBM3" → "NVIDIA-H100-80GB-HBM3".
 */
export function toLabelValue(value: string, separator: '-' | '_' = '-'): string {
  const replaced = value
    .trim()
    .replace(/\s+/g, separator)
    .replace(/[^A-Za-z0-9._-]/g, '-')
    .replace(/([._-])\1+/g, '$1');
  return replaced.slice(0, MAX_LABEL_VALUE_LENGTH).replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
}

export function isValidLabelValue(value: string): boolean {
  return value === '' || (value.length <= MAX_LABEL_VALUE_LENGTH && /^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/.test(value));
}
