// Shared by the HTTP benchmarks: start a server process and wait for it, and drive a URL with a
// closed loop of keep-alive requests, recording per-request latency.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { resolve } from 'node:path';
import { waitFor } from '@gpufleet/process-kit';

export const REPO_ROOT = resolve(__dirname, '../../..');

export interface Started {
  child: ChildProcess;
  base: string;
  stop(): Promise<void>;
}

/** Spawns `command args` and waits until GET `<base><readyPath>` answers 200 (polled every `pollMs`). */
export async function startProcess(
  name: string,
  command: string,
  args: string[],
  base: string,
  readyPath: string,
  env: NodeJS.ProcessEnv = {},
  pollMs = 100,
): Promise<Started> {
  let output = '';
  const child = spawn(command, args, { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOG_LEVEL: 'warn', ...env } });
  child.stdout?.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  child.stderr?.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  try {
    await untilServing(
      `${name} on ${base}${readyPath}`,
      `${base}${readyPath}`,
      () => (child.exitCode !== null ? `exited with ${child.exitCode}: ${output}` : undefined),
      60_000,
      pollMs,
    );
  } catch (err) {
    // A server that never got ready must not outlive the benchmark.
    child.kill('SIGKILL');
    throw err;
  }
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

/**
 * Waits until GET `url` answers 200. `gone()` says why the server's process ended, if it did,
 * so a crash fails at once with its reason rather than at the timeout.
 */
export async function untilServing(what: string, url: string, gone: () => string | undefined, timeoutMs = 60_000, intervalMs = 100): Promise<void> {
  await waitFor(
    what,
    async () => {
      const why = gone();
      if (why !== undefined) throw new Error(`${what}: ${why}`);
      const res = await fetch(url).catch(() => undefined);
      return res?.status === 200 || undefined;
    },
    { timeoutMs, intervalMs },
  );
}

export interface LoadOptions {
  durationS: number;
  warmupS: number;
  concurrency: number;
  /** Process ids whose CPU time (user + system) the measured window should report. */
  cpuOf?: readonly number[];
}

const CLOCK_TICKS = 100; // USER_HZ, 100 on every Linux this runs on

/** CPU seconds (user + system) process `pid` has used so far, from /proc/<pid>/stat; 0 when gone. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS; // utime, stime
  } catch {
    return 0;
  }
}

/** `pid` and its direct children (nginx's master and its worker). */
export function processFamily(pid: number): number[] {
  const family = [pid];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) family.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return family;
}

function cpuOfAll(pids: readonly number[] | undefined): number {
  let total = 0;
  for (const pid of pids ?? []) total += cpuSeconds(pid);
  return total;
}

export interface Result {
  name: string;
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
  /** CPU seconds `cpuOf` used in the measured window (0 when none was given). */
  cpuSeconds: number;
  /** Requests per CPU second of `cpuOf`: what one core busy with them would serve. */
  rpsPerCore: number;
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
  const cpu0 = cpuOfAll(options.cpuOf);
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, options.durationS * 1000));
  measuring = false;
  const seconds = (performance.now() - t0) / 1000;
  const cpu = cpuOfAll(options.cpuOf) - cpu0;
  stop = true;
  await Promise.all(workers);
  agent.destroy();
  const sorted = Float64Array.from(latencies).sort();
  return {
    name,
    requests,
    errors,
    seconds,
    rps: requests / seconds,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    cpuSeconds: cpu,
    rpsPerCore: cpu > 0 ? requests / cpu : NaN,
  };
}

export interface Target {
  readonly name: string;
  readonly base: string;
}

/**
 * Latency of several targets at concurrency 1, measured in turns: each target gets `sliceMs`
 * of back-to-back requests, then the next, round and round until each had `durationS`. Whatever
 * else the machine does meanwhile (these are shared, noisy machines) falls on all of them alike,
 * and within a slice each target runs warm, as it would under steady traffic (a request every
 * few milliseconds would leave the heavier processes' caches cold and measure that instead).
 * Each target is warmed up for `warmupS` first, and the first requests of each slice are not
 * counted. Each target keeps one keep-alive connection.
 */
export async function driveInterleaved(
  targets: readonly Target[],
  payload: unknown,
  options: Omit<LoadOptions, 'concurrency' | 'cpuOf'> & { readonly sliceMs?: number },
  check: (text: string) => boolean,
  path = '/v1/chat/completions',
): Promise<Result[]> {
  const sliceMs = options.sliceMs ?? 250;
  const skipPerSlice = 5;
  const body = JSON.stringify(payload);
  const agents = targets.map(() => new Agent({ keepAlive: true, maxSockets: 1 }));
  const urls = targets.map((t) => new URL(t.base));
  const latencies = targets.map((): number[] => []);
  const errors = targets.map(() => 0);
  const measuredMs = targets.map(() => 0);
  const wantedMs = options.durationS * 1000;
  // Warm-up: each target gets warmupS of requests (JIT, connections) before anything counts.
  for (let i = 0; i < targets.length; i++) {
    const end = performance.now() + options.warmupS * 1000;
    while (performance.now() < end) await once(agents[i], urls[i], path, body).catch(() => undefined);
  }
  for (let i = 0; measuredMs.some((ms) => ms < wantedMs); i = (i + 1) % targets.length) {
    if (measuredMs[i] >= wantedMs) continue;
    const sliceStart = performance.now();
    for (let n = 0; performance.now() - sliceStart < sliceMs; n++) {
      const t0 = performance.now();
      try {
        const { status, text } = await once(agents[i], urls[i], path, body);
        if (n < skipPerSlice) continue;
        if (status !== 200 || !check(text)) errors[i]++;
        else latencies[i].push(performance.now() - t0);
      } catch {
        errors[i]++;
      }
    }
    measuredMs[i] += performance.now() - sliceStart;
  }
  for (const agent of agents) agent.destroy();
  return targets.map((t, i) => {
    const sorted = Float64Array.from(latencies[i]).sort();
    const seconds = measuredMs[i] / 1000;
    return {
      name: t.name,
      requests: sorted.length,
      errors: errors[i],
      seconds,
      rps: sorted.length / seconds,
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
      cpuSeconds: 0,
      rpsPerCore: NaN,
    };
  });
}

export function row(r: Result): string {
  const cpu = r.cpuSeconds > 0 ? ` ${(r.cpuSeconds / r.seconds).toFixed(2)} | ${Math.round(r.rpsPerCore)} |` : ' – | – |';
  return `| ${r.name} | ${r.requests} | ${r.errors} | ${Math.round(r.rps)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} |${cpu}`;
}

export const RESULT_HEADER = [
  '| phase | requests | errors | requests/s | p50 ms | p99 ms | server cores busy | requests per server CPU second |',
  '| --- | --- | --- | --- | --- | --- | --- | --- |',
];
