/** A node name must be a DNS-1123 label so it can be a Kubernetes node name and a NATS subject token. */
export const NODE_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

const RANGE = /\{(\d+)\.\.(\d+)\}/;

/**
 * Expands a name pattern: "h100-{0..1}" → h100-0, h100-1; "gpu-{00..11}" keeps the width
 * of the first bound (gpu-00 … gpu-11). A name without a range is one node.
 * Returns a message (not names) when the pattern is malformed.
 */
export function expandNamePattern(pattern: string): string[] | string {
  const match = RANGE.exec(pattern);
  if (!match) return /[{}]/.test(pattern) ? `malformed range in ${JSON.stringify(pattern)}; write it as {0..7}` : [pattern];
  if (RANGE.test(pattern.slice(match.index + match[0].length))) {
    return `only one {a..b} range is allowed in ${JSON.stringify(pattern)}`;
  }
  const from = Number(match[1]);
  const to = Number(match[2]);
  if (to < from) return `range {${match[1]}..${match[2]}} counts down; write the smaller bound first`;
  const width = match[1].length > 1 && match[1].startsWith('0') ? match[1].length : 0;
  const names: string[] = [];
  for (let i = from; i <= to; i++) {
    names.push(pattern.slice(0, match.index) + String(i).padStart(width, '0') + pattern.slice(match.index + match[0].length));
  }
  return names;
}

/** Substitutes {name} and {index} in a topology value for one node. */
export function fillNodePlaceholders(template: string, name: string, ordinal: number): string {
  // Replacer functions, so a `$` in a name is taken as written, not as a replacement pattern.
  return template.replace(/\{name\}/g, () => name).replace(/\{index\}/g, () => String(ordinal));
}
