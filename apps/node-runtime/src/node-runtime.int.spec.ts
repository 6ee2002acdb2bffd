import { execFileSync, spawnSync } from 'child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { tmpdir, userInfo } from 'os';
import { join } from 'path';
import { connect, type NatsConnection } from 'nats';
import {
  NodeLedger,
  PodPlacement,
  PodRuntimeStatus,
  Workload,
  WorkloadPhase,
  type PodTemplate,
} from '@gpufleet/contracts';
import { detectSandbox, readProcStat, requireSshd } from '@gpufleet/process-runtime';
import { requireBinary, startNats, waitFor, type RunningServer } from '@gpufleet/testing';
import { killRecordedProcesses, openRuntimeBuckets, simulatedInventory, startNodeRuntime, type NodeRuntimeUnderTest, type RuntimeBuckets } from './__fixtures__/node-runtime.harness';

// The node runtime against a real nats-server, running real engine-sim processes and a real
// sshd: what the scheduler writes (inventory, workload, ledger) goes in, processes and pod
// records come out. One runtime is restarted mid-way to show adoption; NATS is restarted too.
const CLUSTER = 'rt';
const NODE = 'node-a';
/** What SANDBOX=auto (the default) gives on this host. */
const sandboxed = detectSandbox().supported;

let nats: RunningServer;
let nc: NatsConnection;
let dir: string;
let env: Record<string, string>;
let runtime: NodeRuntimeUnderTest | undefined;
let buckets: RuntimeBuckets;
const ledgerEntries: NodeLedger['entries'] = [];

const key = (workload: string, podSet = 'server', replica = 0) => `${NODE}.team-a.${workload}.${podSet}.${replica}.0`;

function workload(name: string, template: PodTemplate, phase = WorkloadPhase.WORKLOAD_PHASE_ADMITTED): Workload {
  const w = Workload.fromJSON({ spec: { name, namespace: 'team-a' }, status: {} });
  w.spec!.template = template;
  w.status!.phase = phase;
  return w;
}

function engine(servedModelName: string, engineName = 'vllm'): PodTemplate {
  return {
    engine: {
      deployment: servedModelName,
      role: 'server',
      ordinal: 0,
      model: 'test/sim-model',
      servedModelName,
      engine: { engine: engineName, version: '', mode: 'latency', customCommand: '', multiNode: '', extraArgs: [], env: { SEED: '7' }, speculative: undefined, kvOffload: undefined, envFromSecret: {} },
      templateHash: 'tpl-1',
      artifact: '',
      gpuMemoryUtilization: 0,
    },
  };
}

/** Places a pod of `name` on the node, as the scheduler's ledger write does. */
async function place(name: string, acceleratorIds: string[]): Promise<void> {
  ledgerEntries.push({ workload: `team-a/${name}`, pod: { ...PodPlacement.fromJSON({}), podSet: 'server', replica: 0, pod: 0, node: NODE, acceleratorIds } });
  await buckets.ledger.put(NODE, { node: NODE, entries: ledgerEntries });
}

async function unplace(name: string): Promise<void> {
  ledgerEntries.splice(0, ledgerEntries.length, ...ledgerEntries.filter((e) => e.workload !== `team-a/${name}`));
  await buckets.ledger.put(NODE, { node: NODE, entries: ledgerEntries });
}

async function record(podKey: string, accept: (s: PodRuntimeStatus) => boolean, what: string, timeoutMs = 30_000): Promise<PodRuntimeStatus> {
  let last: PodRuntimeStatus | undefined;
  try {
    return await waitFor(
      `${podKey} ${what}`,
      async () => {
        last = (await buckets.pods.get(podKey))?.value;
        return last && accept(last) ? last : undefined;
      },
      { timeoutMs, intervalMs: 100 },
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; last record: ${JSON.stringify(last && PodRuntimeStatus.toJSON(last))}`);
  }
}

function environ(pid: number): Record<string, string> {
  return Object.fromEntries(
    readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Processes whose command line holds `--port <port>`: there must be exactly one engine per pod. */
/**
 * The processes started for `port`: those whose command line has `--port <port>` and whose parent
 * has not (a sandboxed pod is bwrap, bwrap's init and the engine, one sandbox: bwrap's pid).
 */
function processesOnPort(port: number): number[] {
  const all = readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        const args = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
        const i = args.indexOf('--port');
        return i >= 0 && args[i + 1] === String(port) && alive(Number(p));
      } catch {
        return false;
      }
    })
    .map(Number);
  return all.filter((pid) => !all.includes(readProcStat(pid)?.ppid ?? 0));
}

beforeAll(async () => {
  requireSshd();
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  buckets = await openRuntimeBuckets(nc, CLUSTER);

  dir = mkdtempSync(join(tmpdir(), 'gpufleet-node-runtime-'));
  await buckets.nodes.put(NODE, simulatedInventory(NODE, CLUSTER, [0, 1, 2, 3]));
  env = {
    NODE_NAME: NODE,
    GPUFLEET_CLUSTER: CLUSTER,
    NATS_URL: nats.url,
    STATE_DIR: join(dir, 'state'),
    STOP_GRACE_S: '3',
    RESTART_BACKOFF_BASE_S: '0.2',
    HEALTH_PROBE_INTERVAL_S: '0.2',
  };
  runtime = await startNodeRuntime(env);
  env.HTTP_PORT = String(runtime.config.HTTP_PORT); // the restarted runtime keeps its runtime_url
});

afterAll(async () => {
  await runtime?.close();
  if (env) killRecordedProcesses({ STATE_DIR: env.STATE_DIR, NODE_NAME: NODE });
  await nc?.close();
  await nats?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('node runtime', () => {
  let enginePid: number;
  let enginePort: number;

  it('starts an admitted engine pod with its devices, and reports it Ready on a port that serves the model', async () => {
    await buckets.workloads.put('team-a.llama', workload('llama', engine('sim-llama')));
    await place('llama', ['nvidia-1', 'nvidia-2']);

    const ready = await record(key('llama'), (s) => s.state === 'Ready', 'Ready');
    expect(ready).toMatchObject({
      node: NODE,
      namespace: 'team-a',
      workload: 'llama',
      podSet: 'server',
      host: '127.0.0.1',
      restarts: 0,
      runtimeUrl: runtime!.url,
      templateHash: 'tpl-1',
      devicesEnv: { CUDA_VISIBLE_DEVICES: '1,2', NVIDIA_VISIBLE_DEVICES: '1,2', CUDA_DEVICE_ORDER: 'PCI_BUS_ID' },
    });
    enginePid = ready.pid;
    enginePort = ready.port;
    const models = (await (await fetch(`http://127.0.0.1:${enginePort}/v1/models`)).json()) as { data: Array<{ id: string }> };
    expect(models.data.map((m) => m.id)).toEqual(['sim-llama']);
    expect(environ(enginePid)).toMatchObject({ CUDA_VISIBLE_DEVICES: '1,2', SEED: '7', GPUFLEET_POD: 'team-a/llama/server/0/0' });
    // The runtime's own configuration is not the engine's business.
    expect(environ(enginePid)).not.toHaveProperty('NATS_URL');

    const list = (await (await fetch(`${runtime!.url}/v1/pods`)).json()) as { node: string; pods: Array<{ workload: string; state: string; port: number }> };
    expect(list.node).toBe(NODE);
    expect(list.pods).toEqual([expect.objectContaining({ workload: 'llama', state: 'Ready', port: enginePort })]);
  });

  it('serves the pod log: the last lines as text, 404 for a pod that is not here', async () => {
    const logs = `${runtime!.url}/v1/pods/team-a/llama/server/0/0/logs`;
    const tail = await fetch(`${logs}?tail=3`);
    expect(tail.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect((await tail.text()).trimEnd().split('\n')).toHaveLength(3);
    expect(await (await fetch(logs)).text()).toContain('engine-sim ready');

    const missing = await fetch(`${runtime!.url}/v1/pods/team-a/nope/server/0/0/logs`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: { code: 'NOT_FOUND', message: `pod team-a/nope/server/0/0 is not here on node ${NODE}` } });
    expect((await fetch(`${logs}?tail=-1`)).status).toBe(400);
    const noSshd = await fetch(`${logs}?process=sshd`);
    expect(noSshd.status).toBe(404);
    expect(((await noSshd.json()) as { error: { message: string } }).error.message).toBe(`pod team-a/llama/server/0/0 on node ${NODE} is not a GPU instance: it has no sshd log`);
  });

  it('restarts an engine that was killed, on the same port, and counts the restart', async () => {
    process.kill(enginePid, 'SIGKILL');
    const again = await record(key('llama'), (s) => s.state === 'Ready' && s.pid !== enginePid, 'Ready with a new pid');
    expect(again).toMatchObject({ restarts: 1, port: enginePort, lastExit: 'killed by SIGKILL' });
    enginePid = again.pid;
    const metrics = await (await fetch(`${runtime!.url}/metrics`)).text();
    expect(metrics).toMatch(/gpufleet_node_runtime_restarts_total\{namespace="team-a",workload="llama"[^}]*\} 1/);
    expect(metrics).toMatch(/gpufleet_node_runtime_pods\{state="Ready"[^}]*\} 1/);
  });

  it('reports a pod it cannot start as Failed, with the reason, and keeps the others running', async () => {
    await buckets.workloads.put('team-a.broken', workload('broken', engine('broken', 'tgi')));
    await place('broken', ['nvidia-0']);
    const failed = await record(key('broken'), (s) => s.state === 'Failed', 'Failed');
    expect(failed.message).toBe('INVALID_ENGINE_SPEC: engine: expected one of vllm | sglang | trtllm | llama-cpp | custom, got "tgi"');
    expect(alive(enginePid)).toBe(true);
  });

  let sshPort: number;
  let sshdPid: number;
  let client: string;

  it('runs a GPU instance: a real sshd that lets the given key in, with the devices and the instance environment', async () => {
    client = join(dir, 'client');
    execFileSync(requireBinary('ssh-keygen'), ['-q', '-t', 'ed25519', '-N', '', '-C', 'client', '-f', client]);
    const pub = readFileSync(`${client}.pub`, 'utf8').trim();
    await buckets.workloads.put(
      'team-a.dev',
      workload('dev', { instance: { instance: 'dev', sshPublicKeys: [pub], env: { PROJECT: 'gpufleet' }, envFromSecret: {}, command: 'echo notebook up; while sleep 0.2; do echo tick; done' } }),
    );
    await place('dev', ['nvidia-3']);

    const ready = await record(key('dev'), (s) => s.state === 'Ready', 'Ready');
    // Sandboxed (root, bwrap: SANDBOX=auto), the login user is the pod's own: SANDBOX_UID_BASE + its port.
    const user = sandboxed ? `gpufleet-${200_000 + ready.port}` : userInfo().username;
    expect(ready).toMatchObject({ sshUser: user, sshHostKey: expect.stringMatching(/^ssh-ed25519 /), devicesEnv: { CUDA_VISIBLE_DEVICES: '3' } });
    sshPort = ready.port;
    sshdPid = ready.pid;
    const knownHosts = join(dir, 'known_hosts');
    writeFileSync(knownHosts, `[127.0.0.1]:${sshPort} ${ready.sshHostKey}\n`);
    const ssh = spawnSync(
      'ssh',
      ['-F', '/dev/null', '-p', String(sshPort), '-i', client, '-o', 'BatchMode=yes', '-o', 'IdentitiesOnly=yes', '-o', 'IdentityAgent=none', '-o', 'StrictHostKeyChecking=yes',
        '-o', `UserKnownHostsFile=${knownHosts}`, '-o', 'ConnectTimeout=5', '-o', 'LogLevel=ERROR', `${user}@127.0.0.1`, 'echo "$CUDA_VISIBLE_DEVICES $PROJECT"; pwd'],
      { encoding: 'utf8', timeout: 20_000 },
    );
    expect(ssh).toMatchObject({ status: 0, stdout: `3 gpufleet\n${join(env.STATE_DIR, 'instances', 'team-a.dev.server.0.0', 'work')}\n` });
    // The instance's command runs next to sshd with the same environment; its output is the pod log.
    await waitFor('the instance command log', async () => (await (await fetch(`${runtime!.url}/v1/pods/team-a/dev/server/0/0/logs`)).text()).includes('notebook up') || undefined);
    expect(await (await fetch(`${runtime!.url}/v1/pods/team-a/dev/server/0/0/logs?process=sshd`)).text()).toContain('Server listening');
  });

  it('streams appended log lines while following', async () => {
    const aborter = new AbortController();
    const follow = await fetch(`${runtime!.url}/v1/pods/team-a/dev/server/0/0/logs?tail=0&follow=1`, { signal: aborter.signal });
    const reader = follow.body!.getReader();
    let text = '';
    while ((text.match(/tick\n/g) ?? []).length < 2) text += Buffer.from((await reader.read()).value ?? []).toString();
    expect(text).not.toContain('notebook up'); // tail=0: only what came after
    aborter.abort();
  });

  it('adopts the running pods after a runtime restart instead of starting them again', async () => {
    await runtime!.close();
    runtime = undefined;
    expect(alive(enginePid)).toBe(true); // detached, not stopped

    runtime = await startNodeRuntime(env);
    const engine = await record(key('llama'), (s) => s.state === 'Ready', 'Ready after the restart');
    expect(engine).toMatchObject({ pid: enginePid, port: enginePort, restarts: 1 });
    expect(processesOnPort(enginePort)).toEqual([enginePid]);
    const instance = await record(key('dev'), (s) => s.state === 'Ready', 'Ready after the restart');
    expect(instance).toMatchObject({ pid: sshdPid, port: sshPort });
    expect((await buckets.pods.get(key('broken')))?.value.state).toBe('Failed');
  });

  it('replaces a pod whose template changed, on the same port', async () => {
    const changed = engine('sim-llama');
    changed.engine!.templateHash = 'tpl-2';
    await buckets.workloads.put('team-a.llama', workload('llama', changed));
    const replaced = await record(key('llama'), (s) => s.state === 'Ready' && s.templateHash === 'tpl-2', 'Ready with the new template');
    expect(replaced).toMatchObject({ port: enginePort, restarts: 0 });
    expect(replaced.pid).not.toBe(enginePid);
    expect(alive(enginePid)).toBe(false);
    expect(processesOnPort(enginePort)).toEqual([replaced.pid]);
    enginePid = replaced.pid;
  });

  it('catches up after a NATS restart and stops the pods whose workload or placement is gone', async () => {
    // A follower of the instance log sees its stream end when the pod stops.
    const follow = await fetch(`${runtime!.url}/v1/pods/team-a/dev/server/0/0/logs?tail=1&follow=1`);
    const streamEnded = follow.text();
    await nats.restart();
    // While the runtime reconnects: the engine workload is deleted, the instance unplaced.
    await waitFor('NATS back', async () => (await buckets.workloads.delete('team-a.llama').then(() => true).catch(() => undefined)), { timeoutMs: 15_000, intervalMs: 200 });
    await unplace('dev');
    await unplace('broken');

    await waitFor('the engine stopped', () => !alive(enginePid) || undefined, { timeoutMs: 20_000 });
    await waitFor('the sshd stopped', () => !alive(sshdPid) || undefined, { timeoutMs: 20_000 });
    for (const k of [key('llama'), key('dev'), key('broken')]) {
      await waitFor(`${k} record deleted`, async () => (await buckets.pods.get(k)) === undefined || undefined, { timeoutMs: 10_000 });
    }
    expect(await streamEnded).toContain('tick');
    expect(existsSync(join(env.STATE_DIR, 'instances', 'team-a.dev.server.0.0'))).toBe(false);
    expect(existsSync(join(env.STATE_DIR, 'pods', 'team-a', 'llama', 'server', '0', '0'))).toBe(false);
    expect(((await (await fetch(`${runtime!.url}/v1/pods`)).json()) as { pods: unknown[] }).pods).toEqual([]);
  });
});
