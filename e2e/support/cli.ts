import { ChildProcess, execFile, spawn } from 'child_process';
import { join } from 'path';
import { waitFor } from '@gpufleet/testing';
import { REPO_ROOT } from './services';

export const GPUFLEET_BIN = join(REPO_ROOT, 'bin', 'gpufleet');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `gpufleet ARGS` to completion. */
export function gpufleet(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [GPUFLEET_BIN, ...args], { cwd: REPO_ROOT, env: { ...process.env, ...env } }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** A long-running `gpufleet up`, with its output collected. */
export class UpProcess {
  readonly child: ChildProcess;
  output = '';

  constructor(args: string[]) {
    this.child = spawn(process.execPath, [GPUFLEET_BIN, 'up', ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout?.on('data', (d: Buffer) => (this.output += d.toString()));
    this.child.stderr?.on('data', (d: Buffer) => (this.output += d.toString()));
  }

  async waitUp(timeoutMs = 150_000): Promise<void> {
    await waitFor('gpufleet up', () => {
      if (this.child.exitCode !== null) throw new Error(`gpufleet up exited ${this.child.exitCode}:\n${this.output}`);
      return this.output.includes('gpufleet is up') || undefined;
    }, { timeoutMs, intervalMs: 200 });
  }

  /** SIGTERM, then the exit code. */
  async stop(): Promise<number | null> {
    if (this.child.exitCode !== null) return this.child.exitCode;
    const exited = new Promise<number | null>((r) => this.child.once('exit', (code) => r(code)));
    this.child.kill('SIGTERM');
    return exited;
  }
}
