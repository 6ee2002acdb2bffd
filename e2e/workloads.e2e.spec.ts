import { execFileSync } from 'child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { isPortOpen, waitFor } from '@gpufleet/testing';
import { DEV_FLEET, REPO_ROOT } from './support/services';
import { UpProcess, gpufleet } from './support/cli';
import { agentPidOf, environOf } from './support/processes';

/**
 * Workloads that run, end to end on the simulated dev fleet: `gpufleet up` starts NATS, the
 * scheduler, and per node a device-discovery agent and a node runtime; deployments run
 * engine-sim processes on the allocated devices, instances run a real sshd.
 */

/** As `-o json` prints it: proto3 JSON leaves out zero values (ordinal 0, restarts 0). */
interface Replica {
  role: string;
  ordinal?: number;
  state: string;
  node: string;
  endpoint: string;
  acceleratorIds: string[];
  restarts?: number;
  logsUrl: string;
  workload: string;
}
interface DeploymentJson {
  spec: { name: string };
  status?: { phase?: string; readyReplicas?: number; replicas?: Replica[]; endpoints?: string[] };
}
interface PodJson {
  workload: string;
  pid: number;
  state: string;
  restarts: number;
  devicesEnv: Record<string, string>;
}

const RESCHEDULE_AFTER_S = 5;
const home = mkdtempSync(join(tmpdir(), 'gpufleet-workloads-'));
const at = ['--home', home];
const ns = ['-n', 'team-a'];

async function deployments(): Promise<Record<string, DeploymentJson>> {
  const res = await gpufleet(['get', 'deployments', ...ns, '-o', 'json', ...at]);
  if (res.code !== 0) throw new Error(res.stderr);
  const items = (JSON.parse(res.stdout) as { items: DeploymentJson[] }).items;
  return Object.fromEntries(items.map((d) => [d.spec.name, d]));
}

async function waitReady(names: string[], what: string, timeoutMs = 120_000): Promise<Record<string, DeploymentJson>> {
  let last: Record<string, DeploymentJson> = {};
  await waitFor(
    what,
    async () => {
      last = await deployments();
      return names.every((n) => last[n]?.status?.phase === 'DEPLOYMENT_PHASE_READY') || undefined;
    },
    { timeoutMs, intervalMs: 500 },
  ).catch((err: Error) => {
    throw new Error(`${err.message}\nlast status: ${JSON.stringify(last, null, 1)}`);
  });
  return last;
}

/** The pods a node runtime reports (pid, devices), from its HTTP API. */
async function podsOf(replica: Replica): Promise<PodJson[]> {
  const runtime = new URL(replica.logsUrl).origin;
  // The runtime's pod API needs the stack's admin token, which `up` made in the home.
  const token = readFileSync(join(home, 'admin-token'), 'utf8').trim();
  const body = (await (await fetch(`${runtime}/v1/pods`, { headers: { authorization: `Bearer ${token}` } })).json()) as { pods: PodJson[] } | PodJson[];
  return Array.isArray(body) ? body : body.pods;
}

async function podOf(replica: Replica): Promise<PodJson> {
  const pod = (await podsOf(replica)).find((p) => p.workload === replica.workload);
  if (!pod) throw new Error(`no pod for ${replica.workload} on ${replica.node}`);
  return pod;
}

async function completion(endpoint: string, model: string): Promise<void> {
  const res = await fetch(`${endpoint}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, prompt: 'The capital of France is', max_tokens: 8 }),
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { object: string; choices: Array<{ text: string }>; usage: { completion_tokens: number } };
  expect(body.object).toBe('text_completion');
  expect(body.usage.completion_tokens).toBe(8);
}

async function streamedChat(endpoint: string, model: string): Promise<void> {
  const res = await fetch(`${endpoint}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Say hello' }], max_tokens: 6, stream: true, stream_options: { include_usage: true } }),
  });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
  const text = await res.text();
  const events = text.split('\n\n').filter((e) => e.startsWith('data: '));
  expect(events[events.length - 1]).toBe('data: [DONE]');
  const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)) as { object: string; usage?: { completion_tokens: number } });
  expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
  expect(chunks[chunks.length - 1].usage?.completion_tokens).toBe(6);
}

describe('model deployments and GPU instances on `gpufleet up`', () => {
  const up = new UpProcess([
    ...at,
    '--fleet',
    DEV_FLEET,
    '--scheduler-port',
    '0',
    '--scheduler-http-port',
    '0',
    '--heartbeat-interval',
    '1',
    '--not-ready-timeout',
    '3',
    '--reschedule-after',
    String(RESCHEDULE_AFTER_S),
    // An agent per node, so that stopping one takes exactly one node away (the other tests run
    // the default: several nodes per agent and runtime process).
    '--nodes-per-process',
    '1',
  ]);

  afterAll(async () => {
    await up.stop();
  });

  it('deploys 2×1 H100 and 1×4 H100 (tensor parallel 4) replicas that serve completions and streamed chat', async () => {
    await up.waitUp();
    expect(up.output).toMatch(/runtime\/h100-0/);
    const queues = await gpufleet(['submit', '-f', join(REPO_ROOT, 'examples/workloads/queues.yaml'), ...at]);
    expect(queues.code).toBe(0);

    const small = await gpufleet(['deploy', '/models/llama-3.1-8b', '--name', 'llama', ...ns, '--replicas', '2', '--instance-type', 'h100-80gb-hbm3-x86-64.1x', ...at]);
    expect(small.stderr).toBe('');
    const large = await gpufleet(['deploy', '/models/llama-3.1-70b', '--name', 'llama-tp4', ...ns, '--mode', 'latency', '--instance-type', 'h100-80gb-hbm3-x86-64.4x', ...at]);
    expect(large.stderr).toBe('');

    const ready = await waitReady(['llama', 'llama-tp4'], 'both deployments Ready');
    const replicas = [...ready.llama.status!.replicas!, ...ready['llama-tp4'].status!.replicas!];
    expect(replicas).toHaveLength(3);
    for (const r of replicas) {
      expect(r.state).toBe('Ready');
      const model = r.workload.startsWith('llama-tp4') ? 'llama-3.1-70b' : 'llama-3.1-8b';
      await completion(r.endpoint, model);
      await streamedChat(r.endpoint, model);
    }

    // Each engine sees exactly its devices; the 4-accelerator replica runs tensor parallel 4.
    const tp4 = ready['llama-tp4'].status!.replicas![0];
    expect(tp4.acceleratorIds).toHaveLength(4);
    const tp4Pod = await podOf(tp4);
    const env = environOf(tp4Pod.pid);
    expect(env.CUDA_VISIBLE_DEVICES.split(',')).toHaveLength(4);
    expect(env.CUDA_VISIBLE_DEVICES).toBe(tp4Pod.devicesEnv.CUDA_VISIBLE_DEVICES);
    expect(readFileSync(`/proc/${tp4Pod.pid}/cmdline`, 'utf8').split('\0').join(' ')).toMatch(/--tensor-parallel-size 4\b/);
    const smallDevices = await Promise.all(ready.llama.status!.replicas!.map(async (r) => environOf((await podOf(r)).pid).CUDA_VISIBLE_DEVICES));
    expect(smallDevices.every((d) => d.split(',').length === 1)).toBe(true);

    const logs = await gpufleet(['logs', 'llama', ...ns, '--replica', '0', '--tail', '50', ...at]);
    expect(logs.code).toBe(0);
    expect(logs.stdout.length).toBeGreaterThan(0);
  });

  it('gives a GPU instance its own sshd: the right key gets a shell with the allocated devices, a wrong key is refused', async () => {
    const keys = mkdtempSync(join(tmpdir(), 'gpufleet-keys-'));
    for (const k of ['good', 'wrong']) execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(keys, k)]);
    const created = await gpufleet(['create', 'instance', 'box', ...ns, '--instance-type', 'h100-80gb-hbm3-x86-64.1x', '--ssh-key', join(keys, 'good.pub'), ...at]);
    expect(created.stderr).toBe('');

    let instance: { status?: { phase?: string; devicesEnv?: Record<string, string>; sshPort?: number } } = {};
    await waitFor('instance Running', async () => {
      const res = await gpufleet(['get', 'instances', 'box', ...ns, '-o', 'json', ...at]);
      instance = JSON.parse(res.stdout) as typeof instance;
      return instance.status?.phase === 'INSTANCE_PHASE_RUNNING' || undefined;
    }, { timeoutMs: 60_000, intervalMs: 500 });
    const devices = instance.status!.devicesEnv!.CUDA_VISIBLE_DEVICES;
    expect(devices).toMatch(/^\d+$/);

    const ok = await gpufleet(['ssh', 'box', ...ns, '-i', join(keys, 'good'), ...at, '--', 'echo $CUDA_VISIBLE_DEVICES']);
    expect(ok.stdout.trim()).toBe(devices);
    expect(ok.code).toBe(0);

    const refused = await gpufleet(['ssh', 'box', ...ns, '-i', join(keys, 'wrong'), ...at, '--', 'echo $CUDA_VISIBLE_DEVICES']);
    expect(refused.code).not.toBe(0);
    expect(refused.stdout).not.toContain(devices);
    expect(refused.stderr).toMatch(/Permission denied/);

    const port = instance.status!.sshPort!;
    expect(await gpufleet(['delete', 'instance', 'box', ...ns, ...at])).toMatchObject({ code: 0 });
    await waitFor('sshd stopped', async () => !(await isPortOpen(port)) || undefined, { timeoutMs: 30_000, intervalMs: 250 });
  });

  it('restarts a killed engine, and moves a replica off a node whose agent stopped', async () => {
    const before = (await deployments()).llama.status!.replicas!.find((r) => (r.ordinal ?? 0) === 0)!;
    const pod = await podOf(before);
    process.kill(pod.pid, 'SIGKILL');
    await waitFor('the engine to come back', async () => {
      const now = (await deployments()).llama.status!.replicas!.find((r) => (r.ordinal ?? 0) === 0)!;
      return (now.state === 'Ready' && (now.restarts ?? 0) >= 1) || undefined;
    }, { timeoutMs: 30_000, intervalMs: 250 });
    const restarted = await podOf(before);
    expect(restarted.pid).not.toBe(pod.pid);
    await completion(before.endpoint, 'llama-3.1-8b');

    // Stop the device-discovery agent of replica 0's node: heartbeats stop, the node turns
    // NotReady after 3 s, and after RESCHEDULE_AFTER_S the replica is placed elsewhere.
    const lostNode = before.node;
    const stoppedAt = Date.now();
    process.kill(agentPidOf(up.child.pid!, lostNode), 'SIGTERM');
    await waitFor('the replica to be reported Lost', async () => {
      const now = (await deployments()).llama.status!.replicas!.find((r) => (r.ordinal ?? 0) === 0);
      return now?.state === 'Lost' || undefined;
    }, { timeoutMs: 30_000, intervalMs: 250 });
    const moved = await waitReady(['llama'], 'the replica to move and become Ready', 90_000);
    const replica0 = moved.llama.status!.replicas!.find((r) => (r.ordinal ?? 0) === 0)!;
    expect(replica0.node).not.toBe(lostNode);
    expect(replica0.workload).not.toBe(before.workload);
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(RESCHEDULE_AFTER_S * 1000);
    await completion(replica0.endpoint, 'llama-3.1-8b');
    // The old engine is stopped by its node's runtime once its workload is gone.
    await waitFor('the old engine to stop', async () => !(await isPortOpen(Number(new URL(before.endpoint).port))) || undefined, { timeoutMs: 30_000, intervalMs: 250 });
  });

  it('scales down from the highest ordinal and rolls a spec change through one replica at a time', async () => {
    const before = (await deployments()).llama;
    const kept = before.status!.replicas!.find((r) => (r.ordinal ?? 0) === 0)!;
    expect((await gpufleet(['scale', 'deployment', 'llama', ...ns, '--replicas', '1', ...at])).code).toBe(0);
    await waitFor('one replica left', async () => {
      const d = (await deployments()).llama;
      return (d.status?.phase === 'DEPLOYMENT_PHASE_READY' && d.status.replicas?.length === 1) || undefined;
    }, { timeoutMs: 30_000, intervalMs: 250 });
    const after = (await deployments()).llama.status!.replicas!;
    expect(after.map((r) => r.ordinal ?? 0)).toEqual([0]);
    expect(after[0].workload).toBe(kept.workload); // scaling restarts nothing

    // A new engine mode is a new template: the replica is replaced by one running it.
    const manifest = join(home, 'llama.yaml');
    writeFileSync(
      manifest,
      ['kind: ModelDeployment', 'name: llama', 'namespace: team-a', 'model: /models/llama-3.1-8b', 'servedModelName: llama-3.1-8b',
        'engine: { engine: vllm, mode: latency }', 'roles:', '  - role: server', '    replicas: 1', '    instanceType: h100-80gb-hbm3-x86-64.1x', ''].join('\n'),
    );
    expect((await gpufleet(['submit', '-f', manifest, ...at])).code).toBe(0);
    const rolled = await waitFor('the update to roll out', async () => {
      const d = (await deployments()).llama;
      const r = d.status?.replicas ?? [];
      return (d.status?.phase === 'DEPLOYMENT_PHASE_READY' && r.length === 1 && r[0].workload !== kept.workload && r[0].state === 'Ready') ? d : undefined;
    }, { timeoutMs: 60_000, intervalMs: 250 });
    const pod = await podOf(rolled.status!.replicas![0]);
    expect(readFileSync(`/proc/${pod.pid}/cmdline`, 'utf8').split('\0').join(' ')).toMatch(/--max-num-seqs 32\b/);
  });
});
