import { ChildProcess, spawn } from 'child_process';
import { closeSync, createWriteStream, fstatSync, mkdirSync, openSync, readSync, WriteStream } from 'fs';
import { dirname } from 'path';

/** How long a process's log stays open after it exits, for output still in the pipes. */
const STDIO_GRACE_MS = 2_000;

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

export interface ServiceProcessSpec {
  /** Short name shown to the user, e.g. "scheduler" or "agent/h100-0". */
  name: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** stdout and stderr are appended here. */
  logFile: string;
}

export interface ManagedProcess {
  readonly spec: ServiceProcessSpec;
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
}

/**
 * Starts and stops a set of local service processes. Stops run in reverse start order with
 * SIGTERM first, so services drain before the servers they depend on go away.
 */
export class ProcessGroup {
  private readonly procs: ManagedProcess[] = [];
  private stopping = false;

  constructor(private readonly onUnexpectedExit?: (p: ManagedProcess, code: number | null, signal: NodeJS.Signals | null) => void) {}

  start(spec: ServiceProcessSpec): ManagedProcess {
    mkdirSync(dirname(spec.logFile), { recursive: true });
    const log: WriteStream = createWriteStream(spec.logFile, { flags: 'a' });
    const child = spawn(spec.command, spec.args, {
      cwd: spec.cwd,
      env: spec.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.pipe(log, { end: false });
    child.stderr?.pipe(log, { end: false });
    // A write to the log after it ended would be an unhandled stream error in the supervisor.
    log.on('error', () => undefined);
    const stdioClosed = new Promise<void>((resolve) => child.once('close', () => resolve()));
    const exited = new Promise<number | null>((resolve) => {
      child.once('exit', (code, signal) => {
        // The last lines (often why it exited) may still be in the pipes: the log ends when they
        // close, or after STDIO_GRACE_MS if a grandchild holds them open.
        void Promise.race([stdioClosed, delay(STDIO_GRACE_MS)]).then(() =>
          log.end(() => {
            if (!this.stopping) this.onUnexpectedExit?.(managed, code, signal);
            resolve(code);
          }),
        );
      });
      child.once('error', (err) => {
        log.write(`failed to start: ${err.message}\n`);
        resolve(null);
      });
    });
    const managed: ManagedProcess = { spec, child, exited };
    this.procs.push(managed);
    return managed;
  }

  list(): readonly ManagedProcess[] {
    return this.procs;
  }

  /** SIGTERM each process (newest first), SIGKILL those still running after `graceMs`. */
  async stopAll(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    for (const p of [...this.procs].reverse()) await stopOne(p, graceMs);
  }
}

export async function stopOne(p: ManagedProcess, graceMs: number): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  const timer = setTimeout(() => p.child.kill('SIGKILL'), graceMs);
  p.child.kill('SIGTERM');
  await p.exited;
  clearTimeout(timer);
}

/**
 * The last `lines` lines of a service log, for an error message: JSON log lines (pino) are shown
 * as "level: msg", other lines as they are, each cut at 300 characters. Reads at most the last
 * 64 KiB; an unreadable file gives an empty list.
 */
export function logTail(file: string, lines = 5): string[] {
  let text: string;
  try {
    const fd = openSync(file, 'r');
    try {
      const size = fstatSync(fd).size;
      const length = Math.min(size, 64 * 1024);
      const buf = Buffer.alloc(length);
      readSync(fd, buf, 0, length, size - length);
      text = buf.toString('utf8');
    } finally {
      closeSync(fd);
    }
  } catch {
    return [];
  }
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0)
    .slice(-lines)
    .map((l) => readableLogLine(l).slice(0, 300));
}

const PINO_LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

function readableLogLine(line: string): string {
  if (!line.startsWith('{')) return line;
  try {
    const entry = JSON.parse(line) as { level?: unknown; msg?: unknown };
    if (typeof entry.msg !== 'string') return line;
    const level = typeof entry.level === 'number' ? PINO_LEVELS[entry.level] : entry.level;
    return typeof level === 'string' ? `${level}: ${entry.msg}` : entry.msg;
  } catch {
    return line;
  }
}
