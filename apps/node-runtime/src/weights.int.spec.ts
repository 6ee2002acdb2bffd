// A pod that loads a ModelArtifact, against a real nats-server: model delivery runs as its built
// process (control and node roles, ROLE=all) fetching from the hub simulator on a real socket, the
// node runtime in-process, the engine a real engine-sim child. The workload is placed before its
// artifact exists: the pod waits (Starting, "waiting for weights"), the node's cache fetches the
// artifact because a pod placed on the node needs it (no prefetch), and the engine starts on the
// verified copy, given as its model path.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { credentials, Metadata } from '@grpc/grpc-js';
import { connect, type NatsConnection } from 'nats';
import { ArtifactNodeStatus, ArtifactSourceKind, Buckets, ModelDeliveryServiceClient, PodPlacement, PodRuntimeStatus, Workload, WorkloadPhase } from '@gpufleet/contracts';
import { callUnary } from '@gpufleet/grpc-kit';
import { KvStore } from '@gpufleet/messaging';
import { freshServiceArgs } from '@gpufleet/process-kit';
import { freePort, ProcessGroup, startHubSimulator, startNats, waitFor, type HubSimulator, type RunningServer } from '@gpufleet/testing';
import { killRecordedProcesses, openRuntimeBuckets, simulatedInventory, startNodeRuntime, type NodeRuntimeUnderTest, type RuntimeBuckets } from './__fixtures__/node-runtime.harness';

const REPO_ROOT = resolve(__dirname, '../../..');
const CLUSTER = 'wts';
const NODE = 'node-w';
const ADMIN = 'admin-token-of-the-weights-spec';
const POD_KEY = `${NODE}.team-a.chat.server.0.0`;

let nats: RunningServer;
let nc: NatsConnection;
let hub: HubSimulator;
let dir: string;
let runtime: NodeRuntimeUnderTest | undefined;
let buckets: RuntimeBuckets;
let copies: KvStore<ArtifactNodeStatus>;
let delivery: ModelDeliveryServiceClient;
const group = new ProcessGroup();

const admin = () => {
  const md = new Metadata();
  md.set('authorization', `Bearer ${ADMIN}`);
  return md;
};

async function record(accept: (s: PodRuntimeStatus) => boolean, what: string): Promise<PodRuntimeStatus> {
  let last: PodRuntimeStatus | undefined;
  try {
    return await waitFor(`${POD_KEY} ${what}`, async () => ((last = (await buckets.pods.get(POD_KEY))?.value) && accept(last) ? last : undefined), { timeoutMs: 30_000, intervalMs: 100 });
  } catch (err) {
    throw new Error(`${(err as Error).message}; last record: ${JSON.stringify(last && PodRuntimeStatus.toJSON(last))}; delivery log: ${readFileSync(join(dir, 'model-delivery.log'), 'utf8').slice(-2000)}`);
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

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gpufleet-weights-'));
  [nats, hub] = await Promise.all([
    startNats(),
    startHubSimulator({
      hashCacheDir: null,
      repos: [{ id: 'acme/chat', commits: [{ files: [{ path: 'config.json', content: { bytes: '{"num_hidden_layers":2}' } }, { path: 'model.safetensors', content: { seed: 'chat', size: 256 * 1024 } }] }] }],
    }),
  ]);
  nc = await connect({ servers: nats.url });
  buckets = await openRuntimeBuckets(nc, CLUSTER);
  copies = await KvStore.open(nc.jetstream(), Buckets.artifactNodes(CLUSTER), ArtifactNodeStatus);
  await buckets.nodes.put(NODE, simulatedInventory(NODE, CLUSTER, [0, 1]));

  const [args] = await Promise.all([freshServiceArgs('model-delivery', REPO_ROOT), freshServiceArgs('engine-sim', REPO_ROOT)]);
  const [grpc, http] = [await freePort(), await freePort()];
  const md = group.start({
    name: 'model-delivery',
    command: process.execPath,
    args,
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      GPUFLEET_CLUSTER: CLUSTER,
      NATS_URL: nats.url,
      HOST: '127.0.0.1',
      GPUFLEET_ADMIN_TOKEN: ADMIN,
      ROLE: 'all',
      NODE_NAMES: NODE,
      CACHE_DIR: join(dir, 'cache'),
      HF_ENDPOINT: hub.url,
      GRPC_PORT: String(grpc),
      HTTP_PORT: String(http),
      LEADER_RENEW_S: '0.2',
      LEADER_EXPIRE_S: '1',
      LOG_LEVEL: 'info',
    },
    logFile: join(dir, 'model-delivery.log'),
  });
  await waitFor('model-delivery /readyz', async () => {
    if (md.child.exitCode !== null) throw new Error(`model-delivery exited with ${md.child.exitCode}: ${readFileSync(join(dir, 'model-delivery.log'), 'utf8').slice(-3000)}`);
    return (await fetch(`http://127.0.0.1:${http}/readyz`).catch(() => undefined))?.status === 200 || undefined;
  }, { timeoutMs: 60_000, intervalMs: 100 });
  delivery = new ModelDeliveryServiceClient(`127.0.0.1:${grpc}`, credentials.createInsecure());

  runtime = await startNodeRuntime({ NODE_NAME: NODE, GPUFLEET_CLUSTER: CLUSTER, NATS_URL: nats.url, STATE_DIR: join(dir, 'state'), STOP_GRACE_S: '2', HEALTH_PROBE_INTERVAL_S: '0.2' });
}, 120_000);

afterAll(async () => {
  delivery?.close();
  await runtime?.close();
  killRecordedProcesses({ STATE_DIR: join(dir, 'state'), NODE_NAME: NODE });
  await group.stopAll(10_000);
  await nc?.close();
  await Promise.all([hub?.close(), nats?.dispose()]);
  rmSync(dir, { recursive: true, force: true });
});

it('waits for the node’s copy of the artifact, then starts the engine on it, read-only, offline', async () => {
  const w = Workload.fromJSON({ spec: { name: 'chat', namespace: 'team-a' }, status: {} });
  w.spec!.template = {
    engine: {
      deployment: 'chat',
      role: 'server',
      ordinal: 0,
      model: '',
      servedModelName: 'chat',
      engine: { engine: 'vllm', version: '', mode: 'latency', customCommand: '', multiNode: '', extraArgs: [], env: {}, speculative: undefined, kvOffload: undefined, envFromSecret: {} },
      templateHash: 'tpl-1',
      artifact: 'chat-weights',
      gpuMemoryUtilization: 0,
    },
  };
  const placement = { ...PodPlacement.fromJSON({}), podSet: 'server', replica: 0, pod: 0, node: NODE, acceleratorIds: ['nvidia-0'] };
  w.status!.phase = WorkloadPhase.WORKLOAD_PHASE_ADMITTED;
  w.status!.placements = [placement];
  await buckets.workloads.put('team-a.chat', w);
  await buckets.ledger.put(NODE, { node: NODE, entries: [{ workload: 'team-a/chat', pod: placement }] });

  // No artifact yet: the pod waits and says so; nothing is started.
  const waiting = await record((s) => s.state === 'Starting' && s.message.includes('waiting for weights'), 'waits for its weights');
  expect(waiting.pid).toBe(0);

  // No prefetch: the node's cache fetches it because the pod placed on the node loads it.
  await callUnary(
    delivery,
    delivery.createArtifact,
    {
      spec: {
        name: 'chat-weights',
        namespace: 'team-a',
        source: { kind: ArtifactSourceKind.ARTIFACT_SOURCE_KIND_HUGGINGFACE, repo: 'acme/chat', endpoint: '', url: '', path: '' },
        revision: '',
        allowPatterns: [],
        ignorePatterns: [],
        expectedDigest: '',
        tokenFromSecret: undefined,
        pinned: false,
        labels: {},
        prefetch: [],
      },
    },
    { metadata: admin() },
  );
  const ready = await record((s) => s.state === 'Ready', 'Ready');
  const copy = (await copies.get(`${NODE}.team-a.chat-weights`))!.value;
  expect(copy.state).toBe('Ready');
  expect(copy.path).toMatch(/\/models--acme--chat\/snapshots\/[0-9a-f]{40}$/);

  // {{model_path}} is the copy: engine-sim reports it as the served model's root, as vLLM does.
  const models = (await (await fetch(`http://127.0.0.1:${ready.port}/v1/models`)).json()) as { data: Array<{ id: string; root: string }> };
  expect(models.data).toEqual([expect.objectContaining({ id: 'chat', root: copy.path })]);
  const hubCache = copy.path.slice(0, copy.path.indexOf('/models--acme--chat/'));
  expect(environ(ready.pid)).toMatchObject({ HF_HUB_CACHE: hubCache, HF_HUB_OFFLINE: '1' });
}, 60_000);
