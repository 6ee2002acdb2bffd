import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'fs';
import { basename, dirname, join } from 'path';
import { ProcessRuntimeError } from '@gpufleet/process-spec';
import { readBootId } from './proc';

/** One process the runtime started, as recorded for the runtime that comes after it. */
export interface StateEntry {
  /** The process spec's id. */
  id: string;
  pid: number;
  /** `/proc/<pid>/stat` field 22: with the pid, tells this process apart from a later one with the same pid. */
  startTime: number;
  /** argv as `/proc/<pid>/cmdline` showed it right after the start. */
  cmdline: string[];
  /** `specHash()` of the spec it was started with. */
  specHash: string;
  /** ISO 8601 */
  startedAt: string;
}

export interface StateFileContent {
  version: 1;
  /** The kernel boot id when written: start times mean nothing across a reboot. */
  bootId?: string;
  entries: StateEntry[];
}

const EMPTY: StateFileContent = Object.freeze({ version: 1, entries: [] }) as StateFileContent;

/**
 * What the runtime started, in a JSON file written atomically (temp file, fsync, rename, fsync
 * of the directory): a crash leaves the old content or the new, never half of either. One
 * runtime per file; every change is a synchronous read-modify-write.
 */
export class StateFile {
  constructor(
    readonly path: string,
    private readonly bootId: string | undefined = readBootId(),
  ) {}

  /** The recorded content; empty when the file does not exist yet. */
  read(): StateFileContent {
    let raw: string;
    try {
      raw = readFileSync(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { ...EMPTY, entries: [] };
      throw err;
    }
    const content = parseStateFile(raw);
    if (!content) {
      throw new ProcessRuntimeError(
        'DATA_LOSS',
        `state file ${this.path} is not a gpufleet process state file; move it aside to start afresh (the processes it listed are then no longer known to the runtime)`,
      );
    }
    return content;
  }

  entries(): StateEntry[] {
    return this.read().entries;
  }

  write(entries: readonly StateEntry[]): void {
    const content: StateFileContent = { version: 1, entries: [...entries] };
    if (this.bootId) content.bootId = this.bootId;
    writeFileAtomic(this.path, `${JSON.stringify(content, null, 2)}\n`);
  }

  /** Records (or replaces) the entry with this id. */
  upsert(entry: StateEntry): void {
    this.write([...this.entries().filter((e) => e.id !== entry.id), entry]);
  }

  /** Drops the entry with this id (only if it still names `pid`, when given). */
  remove(id: string, pid?: number): void {
    const entries = this.entries();
    const kept = entries.filter((e) => e.id !== id || (pid !== undefined && e.pid !== pid));
    if (kept.length !== entries.length) this.write(kept);
  }
}

export function parseStateFile(raw: string): StateFileContent | undefined {
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (typeof data !== 'object' || data === null) return undefined;
  const { version, bootId, entries } = data as Record<string, unknown>;
  if (version !== 1 || !Array.isArray(entries) || !entries.every(isEntry)) return undefined;
  const content: StateFileContent = { version: 1, entries: entries as StateEntry[] };
  if (typeof bootId === 'string') content.bootId = bootId;
  return content;
}

function isEntry(value: unknown): value is StateEntry {
  if (typeof value !== 'object' || value === null) return false;
  const e = value as Record<string, unknown>;
  return (
    typeof e.id === 'string' &&
    Number.isInteger(e.pid) &&
    (e.pid as number) > 0 &&
    Number.isInteger(e.startTime) &&
    Array.isArray(e.cmdline) &&
    e.cmdline.every((a) => typeof a === 'string') &&
    typeof e.specHash === 'string' &&
    typeof e.startedAt === 'string'
  );
}

/** Writes `data` to `file` so that readers see the old or the new content, even after a crash. */
export function writeFileAtomic(file: string, data: string): void {
  const dir = dirname(file);
  mkdirSync(dir, { recursive: true });
  const tmp = join(dir, `.${basename(file)}.${process.pid}.tmp`);
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeSync(fd, data);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    try {
      unlinkSync(tmp);
    } catch {
      // nothing to clean up
    }
    throw err;
  }
  closeSync(fd);
  renameSync(tmp, file);
  // The rename is durable once the directory is.
  try {
    const dirFd = openSync(dir, 'r');
    try {
      fsyncSync(dirFd);
    } finally {
      closeSync(dirFd);
    }
  } catch {
    // some filesystems refuse fsync on a directory; the rename is still atomic
  }
}
