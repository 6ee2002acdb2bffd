/** One satisfiable byte range of a file: [start, end] inclusive, as HTTP counts. */
export interface ByteRange {
  readonly start: number;
  readonly end: number;
}

/**
 * Parses a `Range` header for a file of `size` bytes (RFC 9110 §14): a single range only.
 * Returns undefined for no header, 'unsatisfiable' for a range past the end, and 'invalid'
 * for a header this server does not serve (several ranges, other units, bad numbers).
 */
export function parseRange(header: string | undefined, size: number): ByteRange | undefined | 'unsatisfiable' | 'invalid' {
  if (header === undefined) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return 'invalid';
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return 'unsatisfiable';
    return size === 0 ? 'unsatisfiable' : { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== '' && Number(m[2]) < start) return 'invalid';
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}
