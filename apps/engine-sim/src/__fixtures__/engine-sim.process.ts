// Starts the real engine-sim process for integration tests, the way e2e/support/services.ts
// starts services: the build (dist/, brought up to date first) with plain node, logs to a temp file.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freshServiceArgs } from '@gpufleet/process-kit';
import { freePort, ProcessGroup, waitFor, type ManagedProcess } from '@gpufleet/testing';

const REPO_ROOT = resolve(__dirname, '../../../..');
export const TEST_MODEL = 'test/sim-model';

export interface EngineSimProcess {
  readonly proc: ManagedProcess;
  readonly base: string;
  readonly logFile: string;
  log(): string;
}

export class EngineSimProcesses {
  readonly group = new ProcessGroup();
  readonly logs = mkdtempSync(join(tmpdir(), 'gpufleet-engine-sim-'));
  private count = 0;

  /**
   * Starts one engine-sim with `args` (flags) and `env`, on a free port, replica `sim-<n>`.
   * `ready`: wait for /readyz (default), only /healthz (slow start), or nothing (bad config).
   */
  async start(args: string[] = [], env: Record<string, string> = {}, ready: 'readyz' | 'healthz' | 'none' = 'readyz'): Promise<EngineSimProcess> {
    const port = await freePort();
    const name = `sim-${++this.count}`;
    const logFile = join(this.logs, `${name}.log`);
    const proc = this.group.start({
      name,
      command: process.execPath,
      args: [...(await freshServiceArgs('engine-sim', REPO_ROOT)), '--model', TEST_MODEL, '--port', String(port), '--host', '127.0.0.1', '--replica-name', name, ...args],
      cwd: REPO_ROOT,
      env: { ...process.env, LOG_LEVEL: 'info', ...env },
      logFile,
    });
    const base = `http://127.0.0.1:${port}`;
    const log = (): string => {
      try {
        return readFileSync(logFile, 'utf8');
      } catch {
        return '';
      }
    };
    if (ready !== 'none') {
      await waitFor(
        `${name} ${ready} (log: ${logFile})`,
        async () => {
          if (proc.child.exitCode !== null) throw new Error(`${name} exited with ${proc.child.exitCode}: ${log().slice(-2000)}`);
          const res = await fetch(`${base}/${ready}`).catch(() => undefined);
          return res?.status === 200 || undefined;
        },
        { timeoutMs: 45_000, intervalMs: 100 },
      );
    }
    return { proc, base, logFile, log };
  }

  stopAll(): Promise<void> {
    return this.group.stopAll(10_000);
  }
}

/** POSTs JSON and returns status, headers and parsed (or raw) body. */
export async function post(base: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; json: unknown; text: string }> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, json, text };
}

/** The value of one Prometheus series (first match of `name{…labels containing filter…}`). */
export async function metric(base: string, name: string, filter = ''): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (filter && !line.includes(filter)) continue;
    return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  throw new Error(`metric ${name}${filter ? ` (${filter})` : ''} not found`);
}
