// The router as its container runs it (its built main.js as a process): configuration checked at start,
// probes, and a graceful stop on SIGTERM that lets a running stream finish.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseSse } from '@gpufleet/openai-protocol';
import { freshServiceArgs } from '@gpufleet/process-kit';
import { freePort, ProcessGroup, waitFor } from '@gpufleet/testing';
import { chat, post, RouterHarness } from './__fixtures__/router-harness';

const REPO_ROOT = resolve(__dirname, '../../..');
/** The router from its build (brought up to date first), as its image runs it. */
let NODE_ARGS: string[];

let h: RouterHarness;
const group = new ProcessGroup();

beforeAll(async () => {
  NODE_ARGS = await freshServiceArgs('inference-router', REPO_ROOT);
  h = await RouterHarness.start();
});

afterAll(async () => {
  await group.stopAll(5_000);
  await h?.stop();
});

it('stops with 78 and names every bad variable', () => {
  const run = spawnSync(process.execPath, NODE_ARGS, {
    cwd: REPO_ROOT,
    env: { ...process.env, ROUTING_POLICY: 'random', HTTP_PORT: '8085', REDIS_URL: 'http://redis' },
    encoding: 'utf8',
    timeout: 30_000,
  });
  expect(run.status).toBe(78);
  expect(run.stderr).toContain('ROUTING_POLICY: expected one of round_robin, least_request, session, cache_aware, got "random"');
  expect(run.stderr).toContain('REDIS_URL: expected a redis:// or rediss:// URL');
  const clash = spawnSync(process.execPath, NODE_ARGS, { cwd: REPO_ROOT, env: { ...process.env, HTTP_PORT: '8085' }, encoding: 'utf8', timeout: 30_000 });
  expect(clash.status).toBe(78);
  expect(clash.stderr).toContain('OPS_PORT: must differ from HTTP_PORT (both 8085)');
});

it('serves, reports ready, and on SIGTERM finishes a running stream before it exits', async () => {
  const sim = await h.engine(['--itl-ms', '40', '--served-model-name', 'proc/model']);
  await h.putDeployment('proc', 'proc/model', [sim.endpoint]);
  const [http, ops, grpc] = [await freePort(), await freePort(), await freePort()];
  const proc = group.start({
    name: 'inference-router',
    command: process.execPath,
    args: NODE_ARGS,
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      GPUFLEET_CLUSTER: h.cluster,
      NATS_URL: h.nats.url,
      REDIS_URL: h.redis.url,
      HOST: '127.0.0.1',
      HTTP_PORT: String(http),
      OPS_PORT: String(ops),
      GRPC_PORT: String(grpc),
      AUTH_REQUIRED: 'false',
      LOG_LEVEL: 'info',
    },
    logFile: join(h.logs, 'router-process.log'),
  });
  const base = `http://127.0.0.1:${http}`;
  await waitFor(
    'the router process to be ready',
    async () => {
      if (proc.child.exitCode !== null) throw new Error(`exited with ${proc.child.exitCode}`);
      return (await fetch(`http://127.0.0.1:${ops}/readyz`).catch(() => undefined))?.status === 200 || undefined;
    },
    { timeoutMs: 45_000, intervalMs: 100 },
  );
  await waitFor('proc/model to be routable', async () => ((await post(base, '/v1/chat/completions', chat('proc/model', 'warm up'))).status === 200 ? true : undefined));

  const stream = post(base, '/v1/chat/completions', chat('proc/model', 'a long answer', { stream: true, max_tokens: 25, ignore_eos: true }));
  await new Promise((r) => setTimeout(r, 300));
  proc.child.kill('SIGTERM');
  const res = await stream;
  expect(res.status).toBe(200);
  const events = parseSse(res.text);
  expect(events[events.length - 1]).toBe('[DONE]');
  expect(events).toHaveLength(1 + 25 + 1);
  // The shared bootstrap (libs/service-kit) exits 0 once drained, as every service does.
  await proc.exited;
  expect(proc.child.exitCode).toBe(0);
  const log = readFileSync(join(h.logs, 'router-process.log'), 'utf8');
  expect(log).toContain('draining: finishing 1 requests in flight');
  expect(log).toMatch(/inference-router ready: api :\d+, ops :\d+, grpc :\d+/);
  expect(log).toContain('inference-router stopped');
});
