import { appendFileSync, closeSync, copyFileSync, existsSync, mkdirSync, openSync, renameSync, statSync, truncateSync, unlinkSync } from 'fs';
import { dirname } from 'path';
import type { LogRotation } from '@gpufleet/process-spec';

/*
 * A supervised process writes its stdout and stderr straight into its log file (opened for
 * append), not through a pipe to the runtime: a pipe would break (SIGPIPE) the moment the runtime
 * restarts, and the point of adoption is that processes outlive it. So rotation copies the file
 * to `<file>.1` and truncates it in place ("copytruncate"); the writer's O_APPEND offset follows.
 * Lines written between the copy and the truncation are lost: a bounded, documented gap.
 */

export const DEFAULT_LOG_MAX_BYTES = 10 * 1024 * 1024;
export const DEFAULT_LOG_KEEP = 3;

/** Opens (creating its directory) a log file for appending; the caller passes the fd to the child and closes it. */
export function openLogForAppend(file: string): number {
  mkdirSync(dirname(file), { recursive: true });
  return openSync(file, 'a', 0o640);
}

export function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already closed
  }
}

/** Appends one runtime line (`[gpufleet] <time> <text>`) to a process's log. */
export function appendLogLine(file: string, text: string, now: number): void {
  try {
    mkdirSync(dirname(file), { recursive: true });
    appendFileSync(file, `[gpufleet] ${new Date(now).toISOString()} ${text}\n`);
  } catch {
    // the log is best effort: a full disk must not stop supervision
  }
}

/** Rotates `file` when it is larger than `maxBytes`; true when it did. */
export function rotateLogIfNeeded(file: string, rotation: LogRotation = {}): boolean {
  const maxBytes = rotation.maxBytes ?? DEFAULT_LOG_MAX_BYTES;
  const keep = Math.max(1, rotation.keep ?? DEFAULT_LOG_KEEP);
  let size: number;
  try {
    size = statSync(file).size;
  } catch {
    return false;
  }
  if (size <= maxBytes) return false;
  try {
    const oldest = `${file}.${keep}`;
    if (existsSync(oldest)) unlinkSync(oldest);
    for (let i = keep - 1; i >= 1; i--) {
      if (existsSync(`${file}.${i}`)) renameSync(`${file}.${i}`, `${file}.${i + 1}`);
    }
    copyFileSync(file, `${file}.1`);
    truncateSync(file, 0);
    return true;
  } catch {
    return false;
  }
}
