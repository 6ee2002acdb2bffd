// Many simulated nodes per agent process (issue 11): time from spawn to `/readyz` 200 and
// resident memory (VmRSS) of the built agent presenting one node against the same agent
// presenting every node of examples/fleets/fleet-1000.yaml (SIMULATED_NODES=*), each start
// against a fresh nats-server (JetStream), at the default intervals (detection 30 s, heartbeat
// 15 s). RSS is read once ready and again after `--settle-s` seconds (default 90: every node has
// had periodic detection passes and heartbeats, and the heap has shrunk back from the start).
//
//   npm run bench -- agent-fleet [--runs 1] [--settle-s 90]
//
// Ends with: agent_1_node_ready_ms, agent_1_node_rss_mib, agent_1000_nodes_ready_ms,
// agent_1000_nodes_ready_rss_mib, agent_1000_nodes_rss_mib (settled) and
// agent_1000_nodes_extra_mib (settled, 1,000 nodes minus one node).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildApp } from '@gpufleet/process-kit';
import { freePort, startNats } from '@gpufleet/testing';
import { positiveIntOptions } from './support/options';
import { REPO_ROOT, startProcess } from './support/http-load';

const FLEET = join(REPO_ROOT, 'examples/fleets/fleet-1000.yaml');
const CASES: { name: string; key: string; env: Record<string, string> }[] = [
  { name: '1 node', key: 'agent_1_node', env: { NODE_NAME: 'h100-0' } },
  { name: '1000 nodes', key: 'agent_1000_nodes', env: { SIMULATED_NODES: '*' } },
];

function rssMib(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(match[1]) / 1024;
}

async function startOnce(env: Record<string, string>, settleS: number): Promise<{ readyMs: number; readyRss: number; settledRss: number }> {
  const nats = await startNats();
  try {
    const [http, grpc] = [await freePort(), await freePort()];
    const started = process.hrtime.bigint();
    const proc = await startProcess(
      'device-discovery',
      process.execPath,
      ['-r', 'reflect-metadata', join(REPO_ROOT, 'dist/apps/device-discovery/src/main.js')],
      `http://127.0.0.1:${http}`,
      '/readyz',
      { GPUFLEET_CLUSTER: 'dev', NATS_URL: nats.url, HTTP_PORT: String(http), GRPC_PORT: String(grpc), GPUFLEET_PROVIDERS: 'simulated', GPUFLEET_FLEET_FILE: FLEET, OTEL_EXPORTER_OTLP_ENDPOINT: '', ...env },
      10,
    );
    const readyMs = Number(process.hrtime.bigint() - started) / 1e6;
    const pid = proc.child.pid ?? 0;
    const readyRss = rssMib(pid);
    await new Promise((r) => setTimeout(r, settleS * 1000));
    const settledRss = rssMib(pid);
    await proc.stop();
    return { readyMs, readyRss, settledRss };
  } finally {
    await nats.dispose();
  }
}

export async function run(args: string[]): Promise<void> {
  const { runs, settleS } = positiveIntOptions(args, { runs: 1, settleS: 90 });
  await buildApp('device-discovery', { log: (line) => console.log(line) });
  const results = new Map<string, { readyMs: number; readyRss: number; settledRss: number }[]>();
  for (let i = 0; i < runs; i++) {
    for (const c of i % 2 === 0 ? CASES : [...CASES].reverse()) {
      const r = await startOnce(c.env, settleS);
      results.set(c.key, [...(results.get(c.key) ?? []), r]);
      console.log(`run ${i + 1}/${runs} ${c.name.padStart(10)}: ready ${r.readyMs.toFixed(0)} ms, rss ${r.readyRss.toFixed(1)} MiB when ready, ${r.settledRss.toFixed(1)} MiB after ${settleS} s`);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
  const of = (key: string) => {
    const list = results.get(key) ?? [];
    return { readyMs: median(list.map((r) => r.readyMs)), readyRss: median(list.map((r) => r.readyRss)), settledRss: median(list.map((r) => r.settledRss)) };
  };
  console.log('');
  for (const c of CASES) {
    const f = of(c.key);
    console.log(`${c.key}_ready_ms: ${f.readyMs.toFixed(0)}`);
    console.log(`${c.key}_ready_rss_mib: ${f.readyRss.toFixed(1)}`);
    console.log(`${c.key}_rss_mib: ${f.settledRss.toFixed(1)}`);
  }
  console.log(`agent_1000_nodes_extra_mib: ${(of('agent_1000_nodes').settledRss - of('agent_1_node').settledRss).toFixed(1)}`);
}
