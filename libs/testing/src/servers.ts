import { ChildProcess, spawn } from 'child_process';
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { freePort, isPortOpen, requireBinary, StopWaiting, waitFor } from '@gpufleet/process-kit';

export interface RunningServer {
  readonly port: number;
  readonly url: string;
  /** Kill the server (SIGTERM, then SIGKILL) and keep its data directory. */
  stop(): Promise<void>;
  /** Start it again on the same port and data directory (JetStream state survives). */
  restart(): Promise<void>;
  /** Stop and remove its data directory. */
  dispose(): Promise<void>;
}

interface ServerSpec {
  binary: string;
  args: (port: number, dataDir: string) => string[];
  scheme: string;
}

async function launch(spec: ServerSpec): Promise<RunningServer> {
  const bin = requireBinary(spec.binary);
  const dataDir = mkdtempSync(join(tmpdir(), `gpufleet-${spec.binary}-`));
  const port = await freePort();
  let child: ChildProcess | undefined;
  let output = '';

  const start = async (): Promise<void> => {
    output = '';
    const proc = spawn(bin, spec.args(port, dataDir), { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    proc.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    proc.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    let exited = false;
    proc.once('exit', () => (exited = true));
    try {
      await waitFor(`${spec.binary} on port ${port}`, async () => {
        if (exited) throw new StopWaiting(`${spec.binary} exited: ${output.slice(-500)}`);
        return (await isPortOpen(port)) || undefined;
      });
    } catch (err) {
      proc.kill('SIGKILL');
      throw err;
    }
  };

  const stop = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      const killer = setTimeout(() => proc.kill('SIGKILL'), 5_000);
      proc.once('exit', () => {
        clearTimeout(killer);
        resolve();
      });
      proc.kill('SIGTERM');
    });
  };

  await start();
  return {
    port,
    url: `${spec.scheme}://127.0.0.1:${port}`,
    stop,
    restart: async () => {
      await stop();
      await start();
    },
    dispose: async () => {
      await stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface NatsServerOptions {
  /** A nats-server configuration file (e.g. an `authorization` block); address, port and store still come from here. */
  configFile?: string;
}

/** A nats-server with JetStream on a free port, storing in a fresh temp directory. */
export function startNats(options: NatsServerOptions = {}): Promise<RunningServer> {
  const config = options.configFile ? ['-c', options.configFile] : [];
  return launch({
    binary: 'nats-server',
    scheme: 'nats',
    args: (port, dir) => [...config, '-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir],
  });
}

/** A redis-server on a free port, persisting nothing. */
export function startRedis(): Promise<RunningServer> {
  return launch({
    binary: 'redis-server',
    scheme: 'redis',
    args: (port, dir) => [
      '--bind', '127.0.0.1', '--port', String(port), '--dir', dir,
      '--save', '', '--appendonly', 'no', '--protected-mode', 'yes',
    ],
  });
}
