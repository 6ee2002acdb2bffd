// Runs `gpufleet up` as a user does (bin/gpufleet, a fresh --home, every port chosen free) and
// measures it once it says "gpufleet is up": time from spawn, and the resident memory of the
// whole stack, the `up` process and every process below it (nats-server, redis-server, the
// services; no engines, as no deployment runs).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processTree } from '@gpufleet/process-kit';
import { REPO_ROOT } from './http-load';

export interface UpSample {
  readyMs: number;
  /** VmRSS summed over the stack's processes. */
  rssMib: number;
  processes: number;
  /** RSS by process kind (`node-runtime`, `device-discovery`, `nats-server`, …), summed. */
  byKind: Map<string, { count: number; rssMib: number }>;
}

/** VmRSS in MiB; 0 for a process that has gone (or a zombie, which has none). */
export function rssMibOf(pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/** What a process is: the app of a gpufleet service, `gpufleet up` itself, or the program's name. */
function kindOf(pid: number): string {
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const app = args.map((a) => /apps\/([a-z-]+)\/src\/main\.(ts|js)$/.exec(a)?.[1]).find(Boolean);
    if (app) return app;
    if (args.some((a) => a.endsWith('bin/gpufleet'))) return 'gpufleet up';
    return args[0].split('/').pop() ?? 'unknown';
  } catch {
    return 'gone';
  }
}

/** Starts `gpufleet up <args>` in a fresh home, waits until it is up, measures, and stops it. */
export async function measureUp(what: string, args: string[], timeoutMs = 300_000): Promise<UpSample> {
  const home = mkdtempSync(join(tmpdir(), 'gpufleet-up-bench-'));
  const ports = ['--nats-port', '0', '--redis-port', '0', '--router-port', '0', '--scheduler-port', '0', '--scheduler-http-port', '0'];
  const started = process.hrtime.bigint();
  const child = spawn(process.execPath, [join(REPO_ROOT, 'bin/gpufleet'), 'up', '--home', home, '--log-level', 'warn', ...ports, ...args], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: '' },
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    await new Promise<void>((resolve, reject) => {
      const deadline = setTimeout(() => reject(new Error(`${what}: not up after ${timeoutMs / 1000} s:\n${output.slice(-4000)}`)), timeoutMs);
      const check = setInterval(() => {
        if (output.includes('gpufleet is up')) {
          clearInterval(check);
          clearTimeout(deadline);
          resolve();
        } else if (child.exitCode !== null) {
          clearInterval(check);
          clearTimeout(deadline);
          reject(new Error(`${what}: gpufleet up exited ${child.exitCode}:\n${output.slice(-4000)}`));
        }
      }, 100);
    });
    const readyMs = Number(process.hrtime.bigint() - started) / 1e6;
    const byKind = new Map<string, { count: number; rssMib: number }>();
    let rssMib = 0;
    const pids = processTree(child.pid!);
    for (const pid of pids) {
      const rss = rssMibOf(pid);
      if (rss === 0) continue;
      rssMib += rss;
      const kind = kindOf(pid);
      const k = byKind.get(kind) ?? { count: 0, rssMib: 0 };
      byKind.set(kind, { count: k.count + 1, rssMib: k.rssMib + rss });
    }
    return { readyMs, rssMib, processes: [...byKind.values()].reduce((n, k) => n + k.count, 0), byKind };
  } finally {
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 60_000))]);
    if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(home, { recursive: true, force: true });
  }
}

/** One line per kind: `node-runtime ×4 312.5 MiB`. */
export function describeKinds(sample: UpSample): string {
  return [...sample.byKind.entries()]
    .sort((a, b) => b[1].rssMib - a[1].rssMib)
    .map(([kind, k]) => `${kind} ×${k.count} ${k.rssMib.toFixed(0)} MiB`)
    .join(', ');
}
