import { execFileSync, spawnSync } from 'child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { connect, type NatsConnection } from 'nats';
import { NodeLedger, PodPlacement, PodRuntimeStatus, Workload, WorkloadPhase } from '@gpufleet/contracts';
import { detectSandbox, requireSshd } from '@gpufleet/process-runtime';
import { requireBinary, startNats, waitFor, type RunningServer } from '@gpufleet/testing';
import { killRecordedProcesses, openRuntimeBuckets, simulatedInventory, startNodeRuntime, type NodeRuntimeUnderTest, type RuntimeBuckets } from './__fixtures__/node-runtime.harness';

// Two GPU instances on one (simulated) node of a real node runtime, each in its own sandbox:
// logged into with the real ssh client, a session of A tries to reach B and the runtime.
const NODE = 'sbx-0';
const CLUSTER = 'sandbox';
const RUNTIME_SECRET = 'runtime-only-value-7f3a';

let nats: RunningServer;
let nc: NatsConnection;
let dir: string;
let env: Record<string, string>;
let runtime: NodeRuntimeUnderTest | undefined;
let buckets: RuntimeBuckets;

const key = (name: string) => `${NODE}.team-a.${name}.server.0.0`;

function keyPair(name: string): { key: string; pub: string } {
  const file = join(dir, name);
  execFileSync(requireBinary('ssh-keygen'), ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', file]);
  return { key: file, pub: readFileSync(`${file}.pub`, 'utf8').trim() };
}

function instance(name: string, pub: string, command = 'while sleep 1; do :; done'): Workload {
  const w = Workload.fromJSON({ spec: { name, namespace: 'team-a' }, status: {} });
  w.spec!.template = { instance: { instance: name, sshPublicKeys: [pub], env: { PROJECT: name }, envFromSecret: {}, command } };
  w.status!.phase = WorkloadPhase.WORKLOAD_PHASE_ADMITTED;
  return w;
}

async function ready(podKey: string): Promise<PodRuntimeStatus> {
  return waitFor(`${podKey} Ready`, async () => {
    const s = (await buckets.pods.get(podKey))?.value;
    return s?.state === 'Ready' ? s : undefined;
  }, { timeoutMs: 30_000, intervalMs: 100 });
}

function ssh(status: PodRuntimeStatus, keyFile: string, command: string) {
  const r = spawnSync(
    'ssh',
    ['-F', '/dev/null', '-p', String(status.port), '-i', keyFile, '-o', 'BatchMode=yes', '-o', 'IdentitiesOnly=yes', '-o', 'IdentityAgent=none', '-o', 'StrictHostKeyChecking=no',
      '-o', 'UserKnownHostsFile=/dev/null', '-o', 'ConnectTimeout=5', '-o', 'LogLevel=ERROR', `${status.sshUser}@127.0.0.1`, command],
    { encoding: 'utf8', timeout: 20_000 },
  );
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

beforeAll(async () => {
  requireSshd();
  const support = detectSandbox();
  if (!support.supported) throw new Error(`this host cannot sandbox pods: ${support.reason}`);
  // In the runtime's environment, where an unconfined pod would find it.
  process.env.GPUFLEET_TEST_RUNTIME_SECRET = RUNTIME_SECRET;
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  buckets = await openRuntimeBuckets(nc, CLUSTER);
  dir = mkdtempSync(join(tmpdir(), 'gpufleet-node-sandbox-'));
  await buckets.nodes.put(NODE, simulatedInventory(NODE, CLUSTER, [0, 1]));
  env = { NODE_NAME: NODE, GPUFLEET_CLUSTER: CLUSTER, NATS_URL: nats.url, STATE_DIR: join(dir, 'state'), STOP_GRACE_S: '2', SANDBOX: 'required' };
  runtime = await startNodeRuntime(env);
});

afterAll(async () => {
  delete process.env.GPUFLEET_TEST_RUNTIME_SECRET;
  await runtime?.close();
  if (env) killRecordedProcesses({ STATE_DIR: env.STATE_DIR, NODE_NAME: NODE });
  await nc?.close();
  await nats?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const placement = (name: string, accelerators: string[], memoryMib = 0): NodeLedger['entries'][number] => ({
  workload: `team-a/${name}`,
  pod: { ...PodPlacement.fromJSON({}), podSet: 'server', replica: 0, pod: 0, node: NODE, acceleratorIds: accelerators, memoryMib },
});

describe('node runtime with SANDBOX=required: two instances on one node', () => {
  it('says in the runtimes bucket that the node sandboxes its pods', async () => {
    expect((await buckets.runtimes.get(NODE))?.value).toMatchObject({ node: NODE, runtime: 'process', sandboxed: true, sharingAllowed: false });
  });

  it("gives a session of A only A's files, processes, devices and environment", async () => {
    const keyA = keyPair('a');
    const keyB = keyPair('b');
    await buckets.workloads.put('team-a.a', instance('a', keyA.pub));
    await buckets.workloads.put('team-a.b', instance('b', keyB.pub));
    await buckets.ledger.put(NODE, { node: NODE, entries: [placement('a', ['nvidia-0']), placement('b', ['nvidia-1'])] });
    const a = await ready(key('a'));
    const b = await ready(key('b'));
    expect(a).toMatchObject({ sshUser: `gpufleet-${200_000 + a.port}`, sandbox: `bwrap uid ${200_000 + a.port}` });
    expect(await (await fetch(`${runtime!.url}/v1/pods`)).json()).toMatchObject({ sandbox: { enabled: true, detail: expect.stringContaining('pods run sandboxed') } });
    expect(b.sshUser).toBe(`gpufleet-${200_000 + b.port}`);

    const state = env.STATE_DIR;
    const bDir = join(state, 'instances', 'team-a.b.server.0.0');
    const probe = [
      'echo "uid=$(id -u)"',
      'echo "pids=$(ls /proc | grep -cE "^[0-9]+$")"',
      'echo "comms=$(cat /proc/[0-9]*/comm 2>/dev/null | sort -u | tr "\\n" " ")"',
      'echo "dev=$(ls /dev | tr "\\n" " ")"',
      'echo "env=$(env | cut -d= -f1 | sort | tr "\\n" " ")"',
      `ls ${bDir} >/dev/null 2>&1 && echo b-dir=visible || echo b-dir=invisible`,
      `cat ${join(bDir, 'authorized_keys')} >/dev/null 2>&1 && echo b-keys=readable || echo b-keys=unreadable`,
      `ls ${join(state, 'processes.json')} >/dev/null 2>&1 && echo state-file=visible || echo state-file=invisible`,
      `cat /proc/${process.pid}/environ >/dev/null 2>&1 && echo runtime-environ=readable || echo runtime-environ=unreadable`,
      `kill -0 ${b.pid} 2>/dev/null && echo b-sshd=visible || echo b-sshd=invisible`,
      'grep -c . /proc/self/environ >/dev/null; cat /proc/1/environ >/dev/null 2>&1 && echo init-environ=readable || echo init-environ=unreadable',
    ].join('; ');
    const r = ssh(a, keyA.key, probe);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`uid=${200_000 + a.port}`);
    // Its own sshd, its session, bwrap's init: no engine, no other instance, no node runtime.
    expect(Number(/^pids=(\d+)$/m.exec(r.stdout)?.[1])).toBeLessThan(12);
    expect(/^comms=(.*)$/m.exec(r.stdout)?.[1].trim().split(' ').sort()).toEqual(expect.arrayContaining(['bwrap', 'sshd']));
    expect(r.stdout).not.toMatch(/^comms=.*\b(node|sleep)\b/m);
    expect(r.stdout).toMatch(/^dev=.*\bnvidia0\b/m);
    expect(r.stdout).toMatch(/^dev=.*\bnvidiactl\b/m);
    expect(r.stdout).not.toMatch(/^dev=.*\bnvidia1\b/m);
    expect(r.stdout).not.toContain('GPUFLEET_TEST_RUNTIME_SECRET');
    expect(r.stdout).not.toMatch(/^env=.*\bNATS_/m);
    for (const line of ['b-dir=invisible', 'b-keys=unreadable', 'state-file=invisible', 'runtime-environ=unreadable', 'b-sshd=invisible', 'init-environ=unreadable']) {
      expect(r.stdout).toContain(line);
    }
    // A's key does not open B; B's user and key do.
    expect(ssh(b, keyA.key, 'true').status).not.toBe(0);
    expect(ssh(b, keyB.key, 'echo $PROJECT $CUDA_VISIBLE_DEVICES')).toMatchObject({ status: 0, stdout: 'b 1\n' });
  });

  it("keeps the runtime's environment out of a pod's processes, seen from the host", async () => {
    // The instance command of A: its process's environment is the pod's only.
    const entries = (JSON.parse(readFileSync(join(env.STATE_DIR, 'processes.json'), 'utf8')) as { entries: Array<{ id: string; pid: number }> }).entries;
    const commandPid = entries.find((e) => e.id === 'team-a/a/server/0/0/command')?.pid;
    expect(commandPid).toBeDefined();
    const leader = readFileSync(`/proc/${commandPid}/environ`, 'utf8');
    expect(leader).toContain('PROJECT=a');
    expect(leader).not.toContain(RUNTIME_SECRET);
  });

  it('ends every process of an instance with it: a session that left its process group too', async () => {
    const b = await ready(key('b'));
    const keyB = join(dir, 'b');
    // setsid: a new session and process group, as a user's nohup'd job would have.
    const marker = `sleep 617${b.port % 100}`;
    expect(ssh(b, keyB, `setsid sh -c '${marker}' >/dev/null 2>&1 < /dev/null & echo started`)).toMatchObject({ status: 0, stdout: 'started\n' });
    const running = () => readdirSync('/proc').filter((p) => /^\d+$/.test(p) && cmdline(p) === `sh -c ${marker}`);
    await waitFor('the session job', () => running().length > 0 || undefined);
    const ledger = (await buckets.ledger.get(NODE))!.value;
    await buckets.ledger.put(NODE, { node: NODE, entries: ledger.entries.filter((e) => e.workload !== 'team-a/b') });
    await waitFor('instance b gone', async () => ((await buckets.pods.get(key('b'))) === undefined ? true : undefined), { timeoutMs: 20_000 });
    await waitFor('the session job ended', () => running().length === 0 || undefined, { timeoutMs: 5_000 });
  });

  it('OOM-kills a pod process at the memory it requested and reports it OOMKilled', async () => {
    const hog = `${process.execPath} -e 'const h = []; for (;;) h.push(Buffer.alloc(8 << 20, 1))'`;
    await buckets.workloads.put('team-a.hog', instance('hog', keyPair('hog').pub, hog));
    const ledger = (await buckets.ledger.get(NODE))!.value;
    await buckets.ledger.put(NODE, { node: NODE, entries: [...ledger.entries, placement('hog', [], 96)] });
    const status = await waitFor('the hog OOMKilled', async () => {
      const s = (await buckets.pods.get(key('hog')))?.value;
      return s?.lastExit.includes('OOMKilled') ? s : undefined;
    }, { timeoutMs: 30_000, intervalMs: 100 });
    expect(status.lastExit).toMatch(/^command: OOMKilled: the kernel killed it at its memory limit/);
  });
});

function cmdline(pid: string): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
  } catch {
    return '';
  }
}
