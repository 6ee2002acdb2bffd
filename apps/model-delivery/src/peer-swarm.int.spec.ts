// Peer sync between node caches that start at the same moment (issue 15), through the service:
// the node role in-process (ROLE=all, five nodes) against a real nats-server and the hub
// simulator, whose byte counters say what the origin sent. Nodes find each other's blobs in their
// artifact-nodes records (verified_files, fetching_files); a node whose record claims a file and
// then dies (a model-delivery process SIGKILLed mid-file) holds the others up for one stall
// timeout at most.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { credentials, Metadata } from '@grpc/grpc-js';
import { connect, type NatsConnection } from 'nats';
import {
  ArtifactNodeStatus,
  ArtifactPhase,
  ArtifactSourceKind,
  Buckets,
  ModelDeliveryServiceClient,
  Workload,
  WorkloadPhase,
  type CreateArtifactRequest,
  type ModelArtifact,
} from '@gpufleet/contracts';
import { loadConfig } from '@gpufleet/config';
import { callUnary } from '@gpufleet/grpc-kit';
import { KvStore } from '@gpufleet/messaging';
import { freshServiceArgs } from '@gpufleet/process-kit';
import { startService, type RunningService } from '@gpufleet/service-kit';
import { freePort, ProcessGroup, startHubSimulator, startNats, waitFor, type HubSimulator, type RunningServer } from '@gpufleet/testing';
import { AppModule } from './app.module';
import { deliveryConfigSchema } from './config';

const REPO_ROOT = resolve(__dirname, '../../..');
const ADMIN = 'admin-token-of-the-swarm-spec';
const PEER_TOKEN = 'peer-token-of-the-swarm-spec';
const CLUSTER = `sw${process.pid}`;
const MiB = 1024 * 1024;
const SHARD = 2 * MiB;
const SHARDS = 4;
const NODES = ['s1', 's2', 's3', 's4', 's5'];
const STALL_S = 1.5;
const DYING_FILE = 'model.safetensors';
const DYING_SIZE = 3 * MiB;

let nats: RunningServer;
let hub: HubSimulator;
let service: RunningService;
let client: ModelDeliveryServiceClient;
let dir: string;
let connection: NatsConnection;
let copies: KvStore<ArtifactNodeStatus>;
const group = new ProcessGroup();

const admin = () => {
  const md = new Metadata();
  md.set('authorization', `Bearer ${ADMIN}`);
  return md;
};

function spec(name: string, repo: string, prefetch: string[]): CreateArtifactRequest {
  return {
    spec: {
      name,
      namespace: 'team-a',
      source: { kind: ArtifactSourceKind.ARTIFACT_SOURCE_KIND_HUGGINGFACE, repo, endpoint: '', url: '', path: '' },
      revision: '',
      allowPatterns: [],
      ignorePatterns: [],
      expectedDigest: '',
      tokenFromSecret: undefined,
      pinned: false,
      labels: {},
      prefetch,
    },
  };
}

async function until(name: string, ok: (a: ModelArtifact) => boolean, what: string, timeoutMs = 20_000): Promise<ModelArtifact> {
  let last: ModelArtifact | undefined;
  await waitFor(
    `artifact ${name} ${what}`,
    async () => ok((last = (await callUnary(client, client.getArtifact, { namespace: 'team-a', name }, { metadata: admin() })).artifact!)),
    { timeoutMs, intervalMs: 50 },
  ).catch((err) => {
    throw new Error(`${(err as Error).message}; last: ${JSON.stringify(last?.status)}`);
  });
  return last!;
}

beforeAll(async () => {
  [nats, hub] = await Promise.all([
    startNats(),
    startHubSimulator({
      hashCacheDir: null,
      repos: [
        {
          id: 'acme/sharded',
          commits: [
            {
              files: [
                { path: 'config.json', content: { bytes: '{"num_hidden_layers":4}' } },
                ...Array.from({ length: SHARDS }, (_, i) => ({ path: `model-0000${i + 1}-of-0000${SHARDS}.safetensors`, content: { seed: `shard-${i}`, size: SHARD } })),
              ],
            },
          ],
        },
        { id: 'acme/dying', commits: [{ files: [{ path: DYING_FILE, content: { seed: 'dying', size: DYING_SIZE } }] }] },
      ],
    }),
  ]);
  dir = mkdtempSync(join(tmpdir(), 'gpufleet-swarm-it-'));
  const config = loadConfig(deliveryConfigSchema, {
    NATS_URL: nats.url,
    GPUFLEET_CLUSTER: CLUSTER,
    GPUFLEET_ADMIN_TOKEN: ADMIN,
    ROLE: 'all',
    NODE_NAMES: NODES.join(','),
    CACHE_DIR: join(dir, 'caches'),
    HF_ENDPOINT: hub.url,
    PEER_TOKEN,
    GRPC_PORT: String(await freePort()),
    HTTP_PORT: String(await freePort()),
    DOWNLOAD_STALL_TIMEOUT_S: String(STALL_S),
    DOWNLOAD_BACKOFF_MIN_S: '0.05',
    DOWNLOAD_BACKOFF_MAX_S: '0.2',
    LEADER_RENEW_S: '0.2',
    LEADER_EXPIRE_S: '1',
    LOG_LEVEL: 'silent',
  });
  service = await startService({ service: 'model-delivery', config, module: AppModule.forRoot(config) });
  client = new ModelDeliveryServiceClient(`127.0.0.1:${service.grpcPort}`, credentials.createInsecure());
  connection = await connect({ servers: nats.url });
  copies = await KvStore.open(connection.jetstream(), Buckets.artifactNodes(CLUSTER), ArtifactNodeStatus);
}, 30_000);

afterAll(async () => {
  await group.stopAll(5_000);
  client?.close();
  await connection?.close();
  await service?.close();
  await Promise.all([hub?.close(), nats?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

afterEach(() => hub.faults.clear());

describe('peer sync of nodes that start together', () => {
  it('fills five nodes prefetching one 4-file artifact at once with the origin sending it about once', async () => {
    // each response at most 8 MiB/s: a shard takes 250 ms, so every node starts while the first claims run
    hub.setFault('acme/sharded', undefined, { bytesPerSecond: 8 * MiB });
    const before = hub.stats.bytesServed('acme/sharded');
    await callUnary(client, client.createArtifact, spec('sharded', 'acme/sharded', NODES), { metadata: admin() });
    const ready = await until('sharded', (a) => NODES.every((n) => a.status?.nodes.find((c) => c.node === n)?.state === 'Ready'), 'is Ready on every node');
    const total = ready.status!.totalBytes;
    const origin = hub.stats.bytesServed('acme/sharded') - before;
    expect(origin).toBeGreaterThanOrEqual(total);
    expect(origin).toBeLessThanOrEqual(1.2 * total);
    // every weight file came from the origin about once; the rest of the copies came from peers
    for (let i = 0; i < SHARDS; i++) expect(hub.stats.bytesServed('acme/sharded', `model-0000${i + 1}-of-0000${SHARDS}.safetensors`)).toBeLessThanOrEqual(1.2 * SHARD);
    const peerBytes = ready.status!.nodes.reduce((n, c) => n + c.peerBytes, 0);
    expect(peerBytes).toBeGreaterThanOrEqual((NODES.length - 1) * SHARDS * SHARD);
    // a Ready copy lists no files: it holds them all
    for (const c of ready.status!.nodes) expect([c.verifiedFiles, c.fetchingFiles]).toEqual([[], []]);
  });

  it('goes to the origin one stall timeout after the node that claimed a file died mid-file', async () => {
    // the dying node: a model-delivery process of its own, whose stall timeout is long, so that it holds its claim while the hub stalls it
    const args = await freshServiceArgs('model-delivery', REPO_ROOT);
    const http = await freePort();
    const nd = group.start({
      name: 'model-delivery/nd',
      command: process.execPath,
      args,
      cwd: REPO_ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: dir,
        GPUFLEET_CLUSTER: CLUSTER,
        NATS_URL: nats.url,
        HOST: '127.0.0.1',
        ROLE: 'node',
        NODE_NAMES: 'nd',
        CACHE_DIR: join(dir, 'nd'),
        PEER_TOKEN,
        DOWNLOAD_STALL_TIMEOUT_S: '120',
        GRPC_PORT: String(await freePort()),
        HTTP_PORT: String(http),
        LOG_LEVEL: 'info',
      },
      logFile: join(dir, 'nd.log'),
    });
    await waitFor('the dying node ready', async () => {
      if (nd.child.exitCode !== null) throw new Error(`model-delivery nd exited with ${nd.child.exitCode}: ${readFileSync(join(dir, 'nd.log'), 'utf8').slice(-3000)}`);
      return (await fetch(`http://127.0.0.1:${http}/readyz`).catch(() => undefined))?.status === 200 || undefined;
    }, { timeoutMs: 60_000, intervalMs: 100 });

    hub.setFault('acme/dying', DYING_FILE, { stallAfterBytes: 512 * 1024 });
    await callUnary(client, client.createArtifact, spec('dying', 'acme/dying', ['nd']), { metadata: admin() });
    const claimed = await waitFor('nd claims the file and stalls mid-file', async () => {
      const rec = (await copies.get('nd.team-a.dying'))?.value;
      return rec?.state === 'Downloading' && rec.fetchingFiles.length === 1 && hub.stats.bytesServed('acme/dying', DYING_FILE) >= 512 * 1024 ? rec : undefined;
    }, { timeoutMs: 20_000, intervalMs: 50 });
    expect(claimed.fetchingFiles[0].file).toBe(0);
    nd.child.kill('SIGKILL');
    await nd.exited;
    hub.faults.clear();
    const before = hub.stats.bytesServed('acme/dying', DYING_FILE);

    // s1 needs it now (a pod placed on it loads it): it finds nd's claim, waits for it, and gives up on it after the stall timeout
    const resolved = await until('dying', (a) => a.status?.phase === ArtifactPhase.ARTIFACT_PHASE_READY, 'is resolved');
    const workloads = await KvStore.open(connection.jetstream(), Buckets.workloads(CLUSTER), Workload);
    const t = Date.now();
    await workloads.put(
      'team-a.chat',
      Workload.fromPartial({
        spec: { name: 'chat', namespace: 'team-a', template: { engine: { deployment: 'chat', artifact: 'dying' } } },
        status: { phase: WorkloadPhase.WORKLOAD_PHASE_ADMITTED, placements: [{ node: 's1', podSet: 'server' }] },
      }),
    );
    const ready = await until('dying', (a) => a.status?.nodes.find((c) => c.node === 's1')?.state === 'Ready', 'is Ready on s1');
    const waited = Date.now() - t;
    expect(ready.status!.manifestDigest).toBe(resolved.status!.manifestDigest);
    expect(waited).toBeGreaterThanOrEqual(STALL_S * 1000 * 0.9);
    // the whole file from the origin, once: nd held no verified copy to share
    expect(hub.stats.bytesServed('acme/dying', DYING_FILE) - before).toBe(DYING_SIZE);
    expect(ready.status!.nodes.find((c) => c.node === 'nd')).toMatchObject({ state: 'Downloading' });
  });
});
