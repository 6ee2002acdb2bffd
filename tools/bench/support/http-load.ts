// Shared by the HTTP benchmarks: start a server process and wait for it, and drive a URL with a
// closed loop of keep-alive requests, recording per-request latency.
import { spawn, type ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';
import { resolve } from 'node:path';
import { waitFor } from '@gpufleet/process-kit';

export const REPO_ROOT = resolve(__dirname, '../../..');

export interface Started {
  child: ChildProcess;
  base: string;
  stop(): Promise<void>;
}

/** Spawns `command args` and waits until GET `<base><readyPath>` answers 200. */
export async function startProcess(
  name: string,
  command: string,
  args: string[],
  base: string,
  readyPath: string,
  env: NodeJS.ProcessEnv = {},
): Promise<Started> {
  let output = '';
  const child = spawn(command, args, { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOG_LEVEL: 'warn', ...env } });
  child.stdout?.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  child.stderr?.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  await waitFor(
    `${name} on ${base}${readyPath}`,
    async () => {
      if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}: ${output}`);
      const res = await fetch(`${base}${readyPath}`).catch(() => undefined);
      return res?.status === 200 || undefined;
    },
    { timeoutMs: 60_000, intervalMs: 100 },
  );
  return {
    child,
    base,
    stop: () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null) return done();
        const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        child.once('exit', () => {
          clearTimeout(killer);
          done();
        });
        child.kill('SIGTERM');
      }),
  };
}

export interface LoadOptions {
  durationS: number;
  warmupS: number;
  concurrency: number;
}

export interface Result {
  name: string;
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
}

export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function once(agent: Agent, base: URL, path: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolveOnce, reject) => {
    const req = request(
      {
        agent,
        host: base.hostname,
        port: base.port,
        method: 'POST',
        path,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolveOnce({ status: res.statusCode ?? 0, text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Drives POST `<base><path>` with `concurrency` closed-loop workers: warm-up, then `durationS` measured. */
export async function drive(
  name: string,
  base: string,
  payload: unknown,
  options: LoadOptions,
  check: (text: string) => boolean,
  path = '/v1/chat/completions',
): Promise<Result> {
  const agent = new Agent({ keepAlive: true, maxSockets: options.concurrency });
  const url = new URL(base);
  const body = JSON.stringify(payload);
  const latencies: number[] = [];
  let errors = 0;
  let measuring = false;
  let stop = false;
  let requests = 0;

  const worker = async (): Promise<void> => {
    while (!stop) {
      const started = performance.now();
      try {
        const { status, text } = await once(agent, url, path, body);
        if (!measuring) continue;
        if (status !== 200 || !check(text)) errors++;
        else {
          requests++;
          latencies.push(performance.now() - started);
        }
      } catch {
        if (measuring) errors++;
      }
    }
  };

  const workers = Array.from({ length: options.concurrency }, () => worker());
  await new Promise((r) => setTimeout(r, options.warmupS * 1000));
  measuring = true;
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, options.durationS * 1000));
  measuring = false;
  const seconds = (performance.now() - t0) / 1000;
  stop = true;
  await Promise.all(workers);
  agent.destroy();
  const sorted = Float64Array.from(latencies).sort();
  return { name, requests, errors, seconds, rps: requests / seconds, p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

export function row(r: Result): string {
  return `| ${r.name} | ${r.requests} | ${r.errors} | ${Math.round(r.rps)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} |`;
}

export const RESULT_HEADER = ['| phase | requests | errors | requests/s | p50 ms | p99 ms |', '| --- | --- | --- | --- | --- | --- |'];
