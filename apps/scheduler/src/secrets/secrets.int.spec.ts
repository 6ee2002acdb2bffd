// Secrets end to end against a real nats-server: the scheduler and a node runtime run as their
// built processes (their logs are files this spec reads), the engine is a real engine-sim child
// of the node runtime. A deployment takes the engine's API_KEY from a Secret that does not exist
// yet: its replica fails with SECRET_NOT_FOUND, then starts once the Secret is written, with the
// value in the engine's environment and nowhere else (API answers, watch events, KV records, logs).
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { connect, type NatsConnection } from 'nats';
import {
  Buckets,
  CapacityServiceClient,
  DeploymentServiceClient,
  GPUInstanceSpec,
  InstancePhase,
  InstanceServiceClient,
  ListInstanceTypesRequest,
  ModelDeploymentSpec,
  NodeInventory,
  PodRuntimeStatus,
  SecretServiceClient,
  WatchDeploymentsResponse,
  type ModelDeployment,
} from '@gpufleet/contracts';
import { callUnary } from '@gpufleet/grpc-kit';
import { KvStore } from '@gpufleet/messaging';
import { freshServiceArgs } from '@gpufleet/process-kit';
import { freePort, node, ProcessGroup, requireBinary, startNats, stopOne, waitFor, type ManagedProcess, type RunningServer, type ServiceProcessSpec } from '@gpufleet/testing';

const REPO_ROOT = resolve(__dirname, '../../../..');
const CLUSTER = 'sec';
const NODE = 'node-a';
const NS = 'team-a';
/** What must never leave the secrets bucket and the engine's environment. */
const VALUE = 'sk-test-9f8e7d6c5b4a-never-logged';

let nats: RunningServer;
let nc: NatsConnection;
let dir: string;
const group = new ProcessGroup();
let secrets: SecretServiceClient;
let deployments: DeploymentServiceClient;
let instances: InstanceServiceClient;
let capacity: CapacityServiceClient;
const watched: WatchDeploymentsResponse[] = [];
let cancelWatch: (() => void) | undefined;
let schedulerAddress: string;
let runtime: ManagedProcess;
let runtimeSpec: ServiceProcessSpec;
let runtimeHttpPort: number;

const logFile = (name: string) => join(dir, `${name}.log`);

async function waitReady(name: string, port: number, exited: () => number | null): Promise<void> {
  await waitFor(
    `${name} /readyz`,
    async () => {
      if (exited() !== null) throw new Error(`${name} exited with ${exited()}; see ${logFile(name)}:\n${readFileSync(logFile(name), 'utf8').slice(-3000)}`);
      return (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200 || undefined;
    },
    { timeoutMs: 60_000, intervalMs: 100 },
  );
}

async function refused(call: Promise<unknown>): Promise<ServiceError> {
  try {
    await call;
  } catch (err) {
    return err as ServiceError;
  }
  throw new Error('expected the call to be refused');
}

/** `bin/gpufleet …` against the scheduler, as a user runs it. */
function gpufleet(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(join(REPO_ROOT, 'bin/gpufleet'), [...args, '--scheduler', schedulerAddress], { cwd: REPO_ROOT, env: { ...process.env, HOME: dir }, timeout: 60_000 }, (err, stdout, stderr) =>
      done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

async function deployment(): Promise<ModelDeployment> {
  return (await callUnary(deployments, deployments.getDeployment, { namespace: NS, name: 'chat' })).deployment!;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gpufleet-secrets-'));
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  const inventory: NodeInventory = { ...node(NODE, { gpus: 2 }), cluster: CLUSTER, providers: [{ provider: 'simulated', ok: true, error: '', lastSuccess: undefined, lastAttempt: undefined }] };
  await (await KvStore.open(nc.jetstream(), Buckets.nodes(CLUSTER), NodeInventory)).put(NODE, inventory);

  const [schedulerArgs, runtimeArgs] = await Promise.all([freshServiceArgs('scheduler', REPO_ROOT), freshServiceArgs('node-runtime', REPO_ROOT), freshServiceArgs('engine-sim', REPO_ROOT)]);
  const [grpc, schedulerHttp, runtimeHttp, runtimeGrpc] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const common = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? dir, GPUFLEET_CLUSTER: CLUSTER, NATS_URL: nats.url, HOST: '127.0.0.1', LOG_LEVEL: 'debug' };
  const scheduler = group.start({
    name: 'scheduler',
    command: process.execPath,
    args: schedulerArgs,
    cwd: REPO_ROOT,
    env: { ...common, GRPC_PORT: String(grpc), HTTP_PORT: String(schedulerHttp), NOT_READY_TIMEOUT_S: '600', LEADER_RENEW_S: '0.5', LEADER_EXPIRE_S: '2' },
    logFile: logFile('scheduler'),
  });
  runtimeHttpPort = runtimeHttp;
  runtimeSpec = {
    name: 'node-runtime',
    command: process.execPath,
    args: runtimeArgs,
    cwd: REPO_ROOT,
    env: { ...common, NODE_NAME: NODE, STATE_DIR: join(dir, 'state'), HTTP_PORT: String(runtimeHttp), GRPC_PORT: String(runtimeGrpc), STOP_GRACE_S: '2', HEALTH_PROBE_INTERVAL_S: '0.2' },
    logFile: logFile('node-runtime'),
  };
  runtime = group.start(runtimeSpec);
  await Promise.all([waitReady('scheduler', schedulerHttp, () => scheduler.child.exitCode), waitReady('node-runtime', runtimeHttp, () => runtime.child.exitCode)]);
  const address = `127.0.0.1:${grpc}`;
  schedulerAddress = address;
  secrets = new SecretServiceClient(address, credentials.createInsecure());
  deployments = new DeploymentServiceClient(address, credentials.createInsecure());
  instances = new InstanceServiceClient(address, credentials.createInsecure());
  capacity = new CapacityServiceClient(address, credentials.createInsecure());
  const stream = deployments.watchDeployments({ namespace: NS, initial: true }, new Metadata());
  stream.on('data', (m: WatchDeploymentsResponse) => watched.push(m));
  stream.on('error', () => undefined);
  cancelWatch = () => stream.cancel();
}, 240_000);

afterAll(async () => {
  cancelWatch?.();
  secrets?.close();
  deployments?.close();
  instances?.close();
  capacity?.close();
  await group.stopAll(10_000);
  // The engine is the node runtime's child in its own process group; the runtime leaves it for adoption.
  try {
    const entries = (JSON.parse(readFileSync(join(dir, 'state', 'processes.json'), 'utf8')) as { entries: Array<{ pid: number }> }).entries;
    for (const { pid } of entries) process.kill(-pid, 'SIGKILL');
  } catch {
    // nothing recorded, or already gone
  }
  await nc?.close();
  await nats?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

describe('SecretService', () => {
  it('refuses bad secrets with INVALID_ARGUMENT naming the field, never quoting a value', async () => {
    const bad = await refused(callUnary(secrets, secrets.putSecret, { namespace: NS, name: 'Engine_Key', data: { k: VALUE } }));
    expect(bad.code).toBe(status.INVALID_ARGUMENT);
    expect(bad.details).toMatch(/^INVALID_ARGUMENT: name: expected a DNS-1123 label/);
    const many = await refused(callUnary(secrets, secrets.putSecret, { namespace: NS, name: 'many', data: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, VALUE])) }));
    expect(many.details).toContain('data: expected at most 64 keys, got 65');
    const big = await refused(callUnary(secrets, secrets.putSecret, { namespace: NS, name: 'big', data: { blob: VALUE.repeat(3000) } }));
    expect(big.details).toMatch(/data: expected at most 64 KiB of keys and values in all, got \d+ KiB/);
    for (const err of [bad, many, big]) expect(err.details).not.toContain(VALUE);
  });

  it('answers key names, never values; replaces the data on a second put; deletes', async () => {
    const created = await callUnary(secrets, secrets.putSecret, { namespace: NS, name: 'scratch', data: { token: VALUE, other: 'x' } });
    expect(created).toMatchObject({ created: true, secret: { name: 'scratch', namespace: NS, keys: ['other', 'token'], generation: 1 } });
    const replaced = await callUnary(secrets, secrets.putSecret, { namespace: NS, name: 'scratch', data: { token: VALUE } });
    expect(replaced).toMatchObject({ created: false, secret: { keys: ['token'], generation: 2 } });
    const got = await callUnary(secrets, secrets.getSecret, { namespace: NS, name: 'scratch' });
    const listed = await callUnary(secrets, secrets.listSecrets, { namespace: NS, pageSize: 0, pageToken: '' });
    expect(listed.secrets.map((s) => s.name)).toEqual(['scratch']);
    for (const answer of [created, replaced, got, listed]) expect(JSON.stringify(answer)).not.toContain(VALUE);
    await callUnary(secrets, secrets.deleteSecret, { namespace: NS, name: 'scratch' });
    expect((await refused(callUnary(secrets, secrets.getSecret, { namespace: NS, name: 'scratch' }))).code).toBe(status.NOT_FOUND);
  });
});

describe('a deployment whose engine API key comes from a Secret', () => {
  let spec: ModelDeploymentSpec;

  beforeAll(async () => {
    const types = await callUnary(capacity, capacity.listInstanceTypes, ListInstanceTypesRequest.fromPartial({}));
    const one = types.instanceTypes.map((t) => t.name).find((n) => n.endsWith('.1x'));
    if (!one) throw new Error(`no 1x InstanceType: ${types.instanceTypes.map((t) => t.name).join(', ')}`);
    spec = ModelDeploymentSpec.fromPartial({
      name: 'chat',
      namespace: NS,
      model: 'test/sim-model',
      engine: { engine: 'vllm', mode: 'latency', envFromSecret: { API_KEY: { name: 'engine-key', key: 'api-key' } } },
      roles: [{ role: 'server', replicas: 1, size: 1, instanceType: one }],
    });
  });

  it('refuses a variable given by value and by reference', async () => {
    const both = ModelDeploymentSpec.fromPartial({ ...spec, engine: { ...spec.engine!, env: { API_KEY: 'x' } } });
    const err = await refused(callUnary(deployments, deployments.createDeployment, { spec: both }));
    expect(err.code).toBe(status.INVALID_ARGUMENT);
    expect(err.details).toContain('engine.envFromSecret.API_KEY: expected a variable in env or envFromSecret, not both, got both');
  });

  it('fails the replica with SECRET_NOT_FOUND while the Secret is missing', async () => {
    await callUnary(deployments, deployments.createDeployment, { spec });
    const failed = await waitFor(
      'the replica to fail for want of its Secret',
      async () => (await deployment()).status?.replicas.find((r) => r.message.startsWith('SECRET_NOT_FOUND')),
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    expect(failed.message).toContain(`SECRET_NOT_FOUND: secret ${NS}/engine-key does not exist (env API_KEY)`);
  }, 90_000);

  it('starts once the Secret is written, with the value in the engine’s environment and nowhere else', async () => {
    await callUnary(secrets, secrets.putSecret, { namespace: NS, name: 'engine-key', data: { 'api-key': VALUE } });
    const ready = await waitFor('the replica to be Ready', async () => (await deployment()).status?.replicas.find((r) => r.state === 'Ready'), { timeoutMs: 90_000, intervalMs: 200 });

    // The engine has it, and uses it: /v1/models needs the bearer.
    const pods = await KvStore.open(nc.jetstream(), Buckets.pods(CLUSTER), PodRuntimeStatus);
    const pod = (await pods.list()).map((e) => e.value).find((p) => p.namespace === NS && p.state === 'Ready')!;
    const environ = readFileSync(`/proc/${pod.pid}/environ`, 'utf8').split('\0');
    expect(environ).toContain(`API_KEY=${VALUE}`);
    expect((await fetch(`${ready.endpoint}/v1/models`)).status).toBe(401);
    expect((await fetch(`${ready.endpoint}/v1/models`, { headers: { authorization: `Bearer ${VALUE}` } })).status).toBe(200);

    // The API returns the reference.
    const got = await deployment();
    expect(got.spec?.engine?.envFromSecret).toEqual({ API_KEY: { name: 'engine-key', key: 'api-key' } });
    const listed = await callUnary(deployments, deployments.listDeployments, { namespace: NS, pageSize: 0, pageToken: '' });
    await waitFor('a watch event of the Ready replica', async () => watched.some((w) => w.deployment?.status?.replicas.some((r) => r.state === 'Ready')) || undefined, { timeoutMs: 10_000 });
    for (const answer of [got, listed, watched]) expect(JSON.stringify(answer)).not.toContain(VALUE);
    expect(watched.length).toBeGreaterThan(0);

    // No record but the Secret's holds it: deployments, workloads, pods (raw bytes of every key).
    const js = nc.jetstream();
    for (const bucket of [Buckets.deployments(CLUSTER), Buckets.workloads(CLUSTER), Buckets.pods(CLUSTER), Buckets.ledger(CLUSTER)]) {
      const kv = await js.views.kv(bucket);
      for await (const key of await kv.keys()) {
        const entry = await kv.get(key);
        expect(`${bucket}/${key}: ${new TextDecoder().decode(entry?.value)}`).not.toContain(VALUE);
      }
    }
    // Nor any line the scheduler or the node runtime logged (at debug).
    for (const name of ['scheduler', 'node-runtime']) {
      const log = readFileSync(logFile(name), 'utf8');
      expect(log.length).toBeGreaterThan(0);
      expect(log.includes(VALUE)).toBe(false);
    }
    expect(readFileSync(logFile('node-runtime'), 'utf8')).toContain('SECRET_NOT_FOUND');
    // engine-sim itself treats API_KEY as a secret: its log (served by the node runtime) redacts it.
    const engineLog = await (await fetch(ready.logsUrl)).text();
    expect(engineLog).toContain('ready');
    expect(engineLog).not.toContain(VALUE);
  }, 120_000);

  async function readyPod(): Promise<PodRuntimeStatus | undefined> {
    const pods = await KvStore.open(nc.jetstream(), Buckets.pods(CLUSTER), PodRuntimeStatus);
    return (await pods.list()).map((e) => e.value).find((p) => p.namespace === NS && p.workload.startsWith('chat-') && p.state === 'Ready');
  }

  it('keeps a running replica running when its Secret is deleted', async () => {
    const before = (await readyPod())!;
    await callUnary(secrets, secrets.deleteSecret, { namespace: NS, name: 'engine-key' });
    await waitFor('the node runtime to notice', async () => readFileSync(logFile('node-runtime'), 'utf8').includes('keeps running with the environment it started with') || undefined, { timeoutMs: 10_000 });
    expect((await readyPod())?.pid).toBe(before.pid);
    expect((await deployment()).status?.replicas[0]).toMatchObject({ state: 'Ready' });
  });

  it('replaces the engine when the value changes, so the new value takes effect', async () => {
    const before = (await readyPod())!;
    const ROTATED = `${VALUE}-rotated`;
    await callUnary(secrets, secrets.putSecret, { namespace: NS, name: 'engine-key', data: { 'api-key': ROTATED } });
    const after = await waitFor('a new engine process', async () => {
      const p = await readyPod();
      return p && p.pid !== before.pid ? p : undefined;
    }, { timeoutMs: 60_000, intervalMs: 200 });
    expect(readFileSync(`/proc/${after.pid}/environ`, 'utf8').split('\0')).toContain(`API_KEY=${ROTATED}`);
    const endpoint = `http://${after.host}:${after.port}`;
    expect((await fetch(`${endpoint}/v1/models`, { headers: { authorization: `Bearer ${VALUE}` } })).status).toBe(401);
    expect((await fetch(`${endpoint}/v1/models`, { headers: { authorization: `Bearer ${ROTATED}` } })).status).toBe(200);
    for (const name of ['scheduler', 'node-runtime']) expect(readFileSync(logFile(name), 'utf8').includes(ROTATED)).toBe(false);
  }, 90_000);

  it('adopts the engine after a node runtime restart: the value is read again, the process keeps running', async () => {
    const before = (await readyPod())!;
    await stopOne(runtime, 10_000);
    runtime = group.start(runtimeSpec);
    await waitReady('node-runtime', runtimeHttpPort, () => runtime.child.exitCode);
    await new Promise((r) => setTimeout(r, 1_000)); // a reconcile pass or two after the restore
    expect((await readyPod())?.pid).toBe(before.pid);
    expect(readFileSync(logFile('node-runtime'), 'utf8')).toMatch(/restored: 1 processes adopted, 0 started, 0 killed/);
  }, 90_000);
});

describe('a GPU instance whose sessions get a variable from a Secret', () => {
  const INSTANCE_VALUE = 'wandb-77aa88bb99cc-never-logged';

  it('has the value in its sessions and its command, and only the reference in its record', async () => {
    await callUnary(secrets, secrets.putSecret, { namespace: NS, name: 'wandb', data: { key: INSTANCE_VALUE } });
    const client = join(dir, 'client');
    execFileSync(requireBinary('ssh-keygen'), ['-q', '-t', 'ed25519', '-N', '', '-C', 'client', '-f', client]);
    const types = await callUnary(capacity, capacity.listInstanceTypes, ListInstanceTypesRequest.fromPartial({}));
    const spec = GPUInstanceSpec.fromPartial({
      name: 'dev',
      namespace: NS,
      instanceType: types.instanceTypes.map((t) => t.name).find((n) => n.endsWith('.1x')),
      sshPublicKeys: [readFileSync(`${client}.pub`, 'utf8').trim()],
      env: { PROJECT: 'gpufleet' },
      envFromSecret: { WANDB_API_KEY: { name: 'wandb', key: 'key' } },
      command: 'printenv WANDB_API_KEY > from-command.txt; exec sleep 600',
    });
    await callUnary(instances, instances.createInstance, { spec });
    const running = await waitFor(
      'the instance to be Running',
      async () => {
        const i = (await callUnary(instances, instances.getInstance, { namespace: NS, name: 'dev' })).instance!;
        return i.status?.phase === InstancePhase.INSTANCE_PHASE_RUNNING ? i : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    const status = running.status!;
    const knownHosts = join(dir, 'known_hosts');
    writeFileSync(knownHosts, `[${status.sshHost}]:${status.sshPort} ${status.sshHostKey}\n`);
    const ssh = spawnSync(
      'ssh',
      ['-F', '/dev/null', '-p', String(status.sshPort), '-i', client, '-o', 'BatchMode=yes', '-o', 'IdentitiesOnly=yes', '-o', 'IdentityAgent=none', '-o', 'StrictHostKeyChecking=yes',
        '-o', `UserKnownHostsFile=${knownHosts}`, '-o', 'ConnectTimeout=5', '-o', 'LogLevel=ERROR', `${status.sshUser}@${status.sshHost}`, 'echo "$WANDB_API_KEY $PROJECT"; cat from-command.txt'],
      { encoding: 'utf8', timeout: 20_000 },
    );
    expect(ssh).toMatchObject({ status: 0, stdout: `${INSTANCE_VALUE} gpufleet\n${INSTANCE_VALUE}\n` });

    const listed = await callUnary(instances, instances.listInstances, { namespace: NS, pageSize: 0, pageToken: '' });
    expect(listed.instances[0].spec?.envFromSecret).toEqual({ WANDB_API_KEY: { name: 'wandb', key: 'key' } });
    for (const answer of [running, listed]) expect(JSON.stringify(answer)).not.toContain(INSTANCE_VALUE);
    const js = nc.jetstream();
    for (const bucket of [Buckets.instances(CLUSTER), Buckets.workloads(CLUSTER), Buckets.pods(CLUSTER)]) {
      const kv = await js.views.kv(bucket);
      for await (const key of await kv.keys()) expect(new TextDecoder().decode((await kv.get(key))?.value)).not.toContain(INSTANCE_VALUE);
    }
    for (const name of ['scheduler', 'node-runtime']) expect(readFileSync(logFile(name), 'utf8').includes(INSTANCE_VALUE)).toBe(false);
  }, 120_000);
});

describe('the CLI', () => {
  it('creates, lists and deletes secrets without printing a value, and shows references as secret:NAME/KEY', async () => {
    const file = join(dir, 'token.txt');
    writeFileSync(file, VALUE);
    const created = await gpufleet(['create', 'secret', 'cli-made', '-n', NS, '--from-literal', `inline=${VALUE}`, '--from-file', `file=${file}`]);
    expect(created).toMatchObject({ code: 0, stdout: `secret/${NS}/cli-made created (keys: file, inline); use it with --env-secret VAR=cli-made/KEY\n` });
    const listed = await gpufleet(['get', 'secrets', '-n', NS, '-o', 'wide']);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/cli-made\s+2\s+file,inline\s+/);
    const json = await gpufleet(['get', 'secret', 'cli-made', '-n', NS, '-o', 'json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ name: 'cli-made', keys: ['file', 'inline'] });
    const described = await gpufleet(['describe', 'deployment', 'chat', '-n', NS]);
    expect(described.stdout).toContain('Engine env:    API_KEY=secret:engine-key/api-key');
    const deleted = await gpufleet(['delete', 'secret', 'cli-made', '-n', NS]);
    expect(deleted.code).toBe(0);
    expect((await gpufleet(['get', 'secret', 'cli-made', '-n', NS])).code).not.toBe(0);
    for (const r of [created, listed, json, described, deleted]) expect(r.stdout + r.stderr).not.toContain(VALUE);
  }, 120_000);
});
