import { closeSync, openSync, readSync, statSync } from 'fs';

const CHUNK = 64 * 1024;

/**
 * The last `lines` lines of `file` and the offset its end had: reads backwards in chunks, so a
 * large log costs what the tail is, not the file. A last line without a newline counts as a
 * line. A missing file is empty (a pod that has not written yet).
 */
export function tailLines(file: string, lines: number): { text: Buffer; end: number } {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { text: Buffer.alloc(0), end: 0 };
    throw err;
  }
  try {
    const end = statSync(file).size;
    if (lines <= 0 || end === 0) return { text: Buffer.alloc(0), end };
    const chunks: Buffer[] = [];
    let position = end;
    let newlines = 0;
    let start = 0;
    // A trailing newline ends the last line; it does not start another.
    let skipLast = true;
    while (position > 0) {
      const size = Math.min(CHUNK, position);
      position -= size;
      const chunk = Buffer.alloc(size);
      readSync(fd, chunk, 0, size, position);
      chunks.unshift(chunk);
      let found = -1;
      for (let i = size - 1; i >= 0; i--) {
        if (chunk[i] !== 0x0a) continue;
        if (skipLast && position + i === end - 1) continue;
        newlines++;
        if (newlines === lines) {
          found = i;
          break;
        }
      }
      skipLast = false;
      if (found >= 0) {
        start = position + found + 1;
        break;
      }
    }
    const all = Buffer.concat(chunks);
    return { text: all.subarray(start - position), end };
  } finally {
    closeSync(fd);
  }
}

/**
 * Bytes appended to `file` since `offset`, and the offset to read from next. A file that got
 * shorter was rotated (copied and truncated in place): reading starts over at its beginning.
 */
export function readAppended(file: string, offset: number, maxBytes = 1024 * 1024): { data: Buffer; next: number } {
  let size: number;
  try {
    size = statSync(file).size;
  } catch {
    return { data: Buffer.alloc(0), next: offset };
  }
  const from = size < offset ? 0 : offset;
  if (size === from) return { data: Buffer.alloc(0), next: from };
  const length = Math.min(size - from, maxBytes);
  const fd = openSync(file, 'r');
  try {
    const data = Buffer.alloc(length);
    const read = readSync(fd, data, 0, length, from);
    return { data: data.subarray(0, read), next: from + read };
  } finally {
    closeSync(fd);
  }
}
