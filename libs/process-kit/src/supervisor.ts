import { ChildProcess, spawn } from 'child_process';
import { createWriteStream, mkdirSync, WriteStream } from 'fs';
import { dirname } from 'path';

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
    const exited = new Promise<number | null>((resolve) => {
      child.once('exit', (code, signal) => {
        log.end();
        if (!this.stopping) this.onUnexpectedExit?.(managed, code, signal);
        resolve(code);
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
