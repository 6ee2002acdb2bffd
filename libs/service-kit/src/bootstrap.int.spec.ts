// The shared bootstrap: in-process (the function form tests use) and as a process (main.ts),
// where SIGTERM drains, flushes tracing last and exits 0, and a failed start exits 1.
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { freePort } from '@gpufleet/testing';
import { demoLogger, demoModule, type DemoConfig } from './__fixtures__/demo-service';
import { startService } from './bootstrap';

const REPO_ROOT = resolve(__dirname, '../../..');
const MAIN = join(__dirname, '__fixtures__/demo-main.ts');

function config(partial: Partial<DemoConfig> = {}): DemoConfig {
  return { LOG_LEVEL: 'silent', HTTP_PORT: 0, GRPC_PORT: 0, HOST: '127.0.0.1', FAIL: false, ...partial };
}

describe('startService', () => {
  it('resolves with every port bound, serves the probes, and closes', async () => {
    const c = config({ OPS_PORT: 0 });
    const running = await startService({ service: 'demo', config: c, module: demoModule(c, demoLogger(c)), ports: () => ({ api: 1234 }) });
    try {
      expect(running.opsPort).toBeGreaterThan(0);
      expect(running.grpcPort).toBeGreaterThan(0);
      expect(running.ports).toEqual({ api: 1234, ops: running.opsPort, grpc: running.grpcPort });
      expect((await fetch(`http://127.0.0.1:${running.opsPort}/readyz`)).status).toBe(200);
    } finally {
      await running.close();
    }
  });

  it('rejects, instead of exiting the process, when a provider fails', async () => {
    const c = config({ FAIL: true });
    await expect(startService({ service: 'demo', config: c, module: demoModule(c, demoLogger(c)) })).rejects.toThrow('NATS_UNREACHABLE');
  });
});

describe('bootstrapService (main.ts)', () => {
  async function run(env: Record<string, string>, whenReady?: (pid: number, ops: number) => Promise<void>): Promise<{ code: number | null; lines: { msg: string }[] }> {
    const [http, grpc] = [await freePort(), await freePort()];
    const child = spawn(process.execPath, ['-r', 'reflect-metadata', '-r', '@swc-node/register', MAIN], {
      cwd: REPO_ROOT,
      env: { ...process.env, HTTP_PORT: String(http), GRPC_PORT: String(grpc), ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (whenReady && out.includes('demo ready')) {
        const act = whenReady;
        whenReady = undefined;
        void act(child.pid ?? 0, http);
      }
    });
    const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
    const lines = out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string });
    return { code, lines };
  }

  it('on SIGTERM reports not ready, drains, flushes tracing last, and exits 0', async () => {
    let readyWhileDraining = 0;
    const { code, lines } = await run({}, async (pid, ops) => {
      process.kill(pid, 'SIGTERM');
      process.kill(pid, 'SIGINT'); // a second signal does not cut the drain short
      readyWhileDraining = (await fetch(`http://127.0.0.1:${ops}/readyz`).catch(() => undefined))?.status ?? 0;
    });
    expect(code).toBe(0);
    const msgs = lines.map((l) => l.msg);
    expect(msgs.find((m) => m.startsWith('demo ready'))).toMatch(/^demo ready: http :\d+, grpc :\d+$/);
    expect(msgs.filter((m) => ['draining', 'tracing flushed', 'demo stopped'].includes(m))).toEqual(['draining', 'tracing flushed', 'demo stopped']);
    expect(msgs.filter((m) => m.endsWith(': already stopping'))).toHaveLength(1);
    expect([0, 503]).toContain(readyWhileDraining);
  });

  it('logs why a start failed as its last line and exits 1', async () => {
    const { code, lines } = await run({ DEMO_FAIL: '1' });
    expect(code).toBe(1);
    expect(lines.slice(-2).map((l) => l.msg)).toEqual(['demo failed to start: NATS_UNREACHABLE: no server at nats://127.0.0.1:1', 'tracing flushed']);
  });
});
