import { existsSync, mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { connect, type NatsConnection } from 'nats';
import {
  Accelerator,
  AcceleratorVendor,
  NodeInventory,
  PodPlacement,
  PodRuntimeStatus,
  Workload,
  WorkloadPhase,
} from '@gpufleet/contracts';
import { detectSandbox } from '@gpufleet/process-runtime';
import { startNats, waitFor, type RunningServer } from '@gpufleet/testing';
import { killRecordedProcesses, openRuntimeBuckets, startNodeRuntime, type NodeRuntimeUnderTest, type RuntimeBuckets } from './__fixtures__/node-runtime.harness';

// One node runtime process standing in for three simulated nodes (SIMULATED_NODES), against a
// real nats-server with real engine-sim processes: each node has its own records, state
// directory and log endpoint, and is ready only once its own inventory is published.
const CLUSTER = 'sim';
const NODES = ['sim-0', 'sim-1', 'sim-2'];

let nats: RunningServer;
let nc: NatsConnection;
let dir: string;
let env: Record<string, string>;
let runtime: NodeRuntimeUnderTest | undefined;
let buckets: RuntimeBuckets;

function inventory(node: string): NodeInventory {
  const accelerators = [0, 1].map((index) => ({
    ...Accelerator.fromJSON({}),
    id: `nvidia-${index}`,
    vendor: AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA,
    index,
    uuid: `GPU-${node}-${index}`,
    memoryMib: 81_559,
  }));
  return {
    ...NodeInventory.fromJSON({}),
    nodeName: node,
    cluster: CLUSTER,
    accelerators,
    providers: [{ provider: 'simulated', ok: true, error: '', lastSuccess: undefined, lastAttempt: undefined }],
  };
}

function engineWorkload(name: string): Workload {
  const w = Workload.fromJSON({ spec: { name, namespace: 'team-a' }, status: {} });
  w.spec!.template = {
    engine: {
      deployment: name,
      role: 'server',
      ordinal: 0,
      model: 'test/sim-model',
      servedModelName: name,
      engine: { engine: 'vllm', version: '', mode: 'latency', customCommand: '', multiNode: '', extraArgs: [], env: {}, speculative: undefined, kvOffload: undefined, envFromSecret: {} },
      templateHash: 'tpl-1',
      artifact: '',
      gpuMemoryUtilization: 0,
    },
  };
  w.status!.phase = WorkloadPhase.WORKLOAD_PHASE_ADMITTED;
  return w;
}

async function place(node: string, name: string, acceleratorIds: string[]): Promise<void> {
  await buckets.ledger.put(node, {
    node,
    entries: [{ workload: `team-a/${name}`, pod: { ...PodPlacement.fromJSON({}), podSet: 'server', replica: 0, pod: 0, node, acceleratorIds } }],
  });
}

async function readyRecord(podKey: string, accept: (s: PodRuntimeStatus) => boolean = () => true): Promise<PodRuntimeStatus> {
  return waitFor(
    `${podKey} Ready`,
    async () => {
      const s = (await buckets.pods.get(podKey))?.value;
      return s && s.state === 'Ready' && accept(s) ? s : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 100 },
  );
}

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  buckets = await openRuntimeBuckets(nc, CLUSTER);

  dir = mkdtempSync(join(tmpdir(), 'gpufleet-sim-nodes-'));
  env = {
    NODE_NAME: 'sim-runtime',
    SIMULATED_NODES: NODES.join(','),
    GPUFLEET_CLUSTER: CLUSTER,
    NATS_URL: nats.url,
    STATE_DIR: join(dir, 'nodes'),
    STOP_GRACE_S: '3',
    HEALTH_PROBE_INTERVAL_S: '0.2',
  };
});

afterAll(async () => {
  await runtime?.close();
  if (env) killRecordedProcesses({ STATE_DIR: env.STATE_DIR, NODE_NAME: env.NODE_NAME, SIMULATED_NODES: NODES });
  await nc?.close();
  await nats?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('one node runtime for several simulated nodes', () => {
  it('is ready only once every node has its inventory, and says which nodes it waits for', async () => {
    await buckets.nodes.put('sim-0', inventory('sim-0'));
    await buckets.nodes.put('sim-1', inventory('sim-1'));
    runtime = await startNodeRuntime(env, { waitReady: false });
    env.HTTP_PORT = String(runtime.config.HTTP_PORT);
    const notReady = await waitFor(
      'a /readyz that names the waiting node',
      async () => {
        const res = await fetch(`${runtime!.url}/readyz`).catch(() => undefined);
        const body = res && res.status === 503 ? await res.text() : '';
        return body.includes('wait for their inventory') ? body : undefined;
      },
      { timeoutMs: 10_000, intervalMs: 50 },
    );
    expect(notReady).toContain('1 of 3 nodes wait for their inventory in the nodes bucket (sim-2)');

    await buckets.nodes.put('sim-2', inventory('sim-2'));
    await waitFor('/readyz 200', async () => (await fetch(`${runtime!.url}/readyz`)).status === 200 || undefined, { timeoutMs: 10_000, intervalMs: 50 });
  });

  it("reports each node's sandboxing in the runtimes bucket", async () => {
    const sandboxed = detectSandbox().supported;
    for (const node of NODES) {
      const report = (await buckets.runtimes.get(node))?.value;
      expect(report).toMatchObject({ node, runtime: 'process', sandboxed, sharingAllowed: false });
      expect(report?.sandboxDetail).toMatch(sandboxed ? /^pods run sandboxed/ : /one namespace’s pods at a time/);
    }
  });

  let pid: number;

  it('runs a pod placed on one node as that node: its key, its state directory, its runtime_url', async () => {
    await buckets.workloads.put('team-a.llama', engineWorkload('llama'));
    await place('sim-1', 'llama', ['nvidia-1']);
    const ready = await readyRecord('sim-1.team-a.llama.server.0.0');
    expect(ready).toMatchObject({ node: 'sim-1', runtimeUrl: `${runtime!.url}/nodes/sim-1`, devicesEnv: expect.objectContaining({ CUDA_VISIBLE_DEVICES: '1' }) });
    pid = ready.pid;
    expect(existsSync(join(env.STATE_DIR, 'sim-1', 'processes.json'))).toBe(true);
    // No other node runs it.
    expect(await buckets.pods.get('sim-0.team-a.llama.server.0.0')).toBeUndefined();

    const all = (await (await fetch(`${runtime!.url}/v1/pods`)).json()) as { node: string; nodes: string[]; pods: Array<{ node: string }> };
    expect(all).toMatchObject({ node: 'sim-runtime', nodes: NODES, pods: [expect.objectContaining({ node: 'sim-1' })] });
    const sim0 = (await (await fetch(`${runtime!.url}/nodes/sim-0/v1/pods`)).json()) as { nodes: string[]; pods: unknown[] };
    expect(sim0).toMatchObject({ nodes: ['sim-0'], pods: [] });
  });

  it('serves the pod log under its runtime_url, and 404s with the reason elsewhere', async () => {
    const log = await fetch(`${runtime!.url}/nodes/sim-1/v1/pods/team-a/llama/server/0/0/logs`);
    expect(log.status).toBe(200);
    expect(await log.text()).toContain('engine-sim ready');
    expect((await fetch(`${runtime!.url}/v1/pods/team-a/llama/server/0/0/logs?tail=1`)).status).toBe(200);

    const wrongNode = await fetch(`${runtime!.url}/nodes/sim-0/v1/pods/team-a/llama/server/0/0/logs`);
    expect(wrongNode.status).toBe(404);
    expect(await wrongNode.json()).toEqual({ error: { code: 'NOT_FOUND', message: 'pod team-a/llama/server/0/0 is not here on node sim-0' } });
    const unknown = await fetch(`${runtime!.url}/nodes/gpu-9/v1/pods`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: { code: 'NOT_FOUND', message: 'node "gpu-9" is not run by this runtime; it runs sim-0, sim-1, sim-2' } });
  });

  it('moves a pod between two of its nodes: stopped on the old one, started on the new one', async () => {
    await buckets.ledger.put('sim-1', { node: 'sim-1', entries: [] });
    await place('sim-2', 'llama', ['nvidia-0']);
    const moved = await readyRecord('sim-2.team-a.llama.server.0.0');
    expect(moved).toMatchObject({ node: 'sim-2', runtimeUrl: `${runtime!.url}/nodes/sim-2`, devicesEnv: expect.objectContaining({ CUDA_VISIBLE_DEVICES: '0' }) });
    await waitFor('the old record deleted', async () => (await buckets.pods.get('sim-1.team-a.llama.server.0.0')) === undefined || undefined, { timeoutMs: 15_000, intervalMs: 100 });
    pid = moved.pid;
  });

  it('a restarted runtime adopts each node’s running pods', async () => {
    await runtime!.close();
    runtime = await startNodeRuntime(env);
    // The new process's own table (not the record the old one left) has the same engine.
    const live = (await (await fetch(`${runtime!.url}/nodes/sim-2/v1/pods`)).json()) as { pods: Array<{ pid: number; node: string }> };
    expect(live.pods).toEqual([expect.objectContaining({ pid, node: 'sim-2' })]);
    const again = await readyRecord('sim-2.team-a.llama.server.0.0', (s) => s.pid === pid);
    expect(again.restarts).toBe(0);
  });
});
