// Model delivery in-process (control and node roles, ROLE=all) against a real nats-server and the
// hub simulator on a real socket: an artifact is resolved to a manifest, fetched into two node
// caches (the second from the first as a peer), and its progress and failures show in its status.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, Metadata, status as GrpcStatus } from '@grpc/grpc-js';
import { connect, type NatsConnection } from 'nats';
import {
  ArtifactPhase,
  ArtifactSourceKind,
  Buckets,
  Workload,
  WorkloadPhase,
  ModelDeliveryServiceClient,
  type CreateArtifactRequest,
  type ModelArtifact,
  type ModelArtifactSpec,
} from '@gpufleet/contracts';
import { loadConfig } from '@gpufleet/config';
import { KvStore } from '@gpufleet/messaging';
import { callUnary } from '@gpufleet/grpc-kit';
import { startService, type RunningService } from '@gpufleet/service-kit';
import { freePort, grpcError, startHubSimulator, startNats, waitFor, writeSparseCheckpoint, type HubSimulator, type RunningServer, type SparseCheckpoint } from '@gpufleet/testing';
import { AppModule } from './app.module';
import { deliveryConfigSchema, type DeliveryConfig } from './config';
import { readPersistedLeases } from '@gpufleet/model-cache';
import { NodeCachesService } from './node/node-caches.service';

const ADMIN = 'admin-token-of-the-delivery-spec';
const WEIGHTS = 3 * 1024 * 1024 + 7;

let nats: RunningServer;
let hub: HubSimulator;
let service: RunningService;
let client: ModelDeliveryServiceClient;
let cacheDir: string;
let connection: NatsConnection;
/** Qwen2.5-7B's real config.json and generated safetensors headers over sparse data (15 GB, a few KiB on disk). */
let qwen: SparseCheckpoint;
let config: DeliveryConfig;

const admin = () => {
  const md = new Metadata();
  md.set('authorization', `Bearer ${ADMIN}`);
  return md;
};

function spec(name: string, extra: Partial<ModelArtifactSpec> = {}): CreateArtifactRequest {
  return {
    spec: {
      name,
      namespace: 'team-a',
      source: { kind: ArtifactSourceKind.ARTIFACT_SOURCE_KIND_HUGGINGFACE, repo: 'acme/llm', endpoint: '', url: '', path: '' },
      revision: '',
      allowPatterns: [],
      ignorePatterns: [],
      expectedDigest: '',
      tokenFromSecret: undefined,
      pinned: false,
      labels: {},
      prefetch: [],
      ...extra,
    },
  };
}

async function artifact(name: string): Promise<ModelArtifact> {
  return (await callUnary(client, client.getArtifact, { namespace: 'team-a', name }, { metadata: admin() })).artifact!;
}

async function until(name: string, ok: (a: ModelArtifact) => boolean, what: string): Promise<ModelArtifact> {
  let last: ModelArtifact | undefined;
  await waitFor(`artifact ${name} ${what}`, async () => ok((last = await artifact(name))), { timeoutMs: 20_000 }).catch((err) => {
    throw new Error(`${(err as Error).message}; last: ${JSON.stringify(last?.status)}`);
  });
  return last!;
}

beforeAll(async () => {
  qwen = writeSparseCheckpoint('qwen2.5-7b', { dtype: 'BF16', shards: 4, totalSize: 15_231_233_024 });
  [nats, hub] = await Promise.all([
    startNats(),
    startHubSimulator({
      hashCacheDir: null,
      repos: [
        {
          id: 'acme/llm',
          commits: [
            {
              files: [
                { path: 'config.json', content: { bytes: '{"num_hidden_layers":2}' } },
                { path: 'model.safetensors', content: { seed: 'llm', size: WEIGHTS } },
                { path: 'original/consolidated.pth', content: { seed: 'orig', size: 4096 } },
              ],
            },
          ],
        },
        {
          id: 'acme/qwen',
          commits: [
            {
              // Declared oids spare hashing 15 GB of holes: nothing here downloads the shards.
              files: qwen.files.map((path) => ({ path, content: { file: join(qwen.dir, path), ...(path.endsWith('.safetensors') ? { sha256: createHash('sha256').update(path).digest('hex') } : {}) } })),
            },
          ],
        },
      ],
    }),
  ]);
  cacheDir = mkdtempSync(join(tmpdir(), 'gpufleet-delivery-it-'));
  config = loadConfig(deliveryConfigSchema, {
    NATS_URL: nats.url,
    GPUFLEET_CLUSTER: `md${process.pid}`,
    GPUFLEET_ADMIN_TOKEN: ADMIN,
    ROLE: 'all',
    NODE_NAMES: 'n1,n2',
    CACHE_DIR: cacheDir,
    HF_ENDPOINT: hub.url,
    PEER_TOKEN: 'peer-token-of-the-delivery-spec',
    GRPC_PORT: String(await freePort()),
    HTTP_PORT: String(await freePort()),
    REVALIDATE_S: '1',
    RETRY_S: '0.5',
    DOWNLOAD_BACKOFF_MIN_S: '0.05',
    DOWNLOAD_BACKOFF_MAX_S: '0.2',
    LEADER_RENEW_S: '0.2',
    LEADER_EXPIRE_S: '1',
    LOG_LEVEL: 'silent',
  });
  service = await startService({ service: 'model-delivery', config, module: AppModule.forRoot(config) });
  client = new ModelDeliveryServiceClient(`127.0.0.1:${service.grpcPort}`, credentials.createInsecure());
  connection = await connect({ servers: nats.url });
}, 30_000);

afterAll(async () => {
  client?.close();
  await connection?.close();
  await service?.close();
  await Promise.all([hub?.close(), nats?.stop()]);
  rmSync(cacheDir, { recursive: true, force: true });
  qwen?.dispose();
});

afterEach(() => hub.faults.clear());

describe('ModelDeliveryService', () => {
  it('refuses calls without a token and a spec with a bad field, naming it', async () => {
    const unauthenticated = await grpcError(callUnary(client, client.createArtifact, spec('anon'), { metadata: new Metadata() }));
    expect(unauthenticated.code).toBe(GrpcStatus.UNAUTHENTICATED);
    const bad = await grpcError(callUnary(client, client.createArtifact, spec('bad', { source: { kind: ArtifactSourceKind.ARTIFACT_SOURCE_KIND_HUGGINGFACE, repo: 'not a repo', endpoint: '', url: '', path: '' }, prefetch: ['Bad_Node'] }), { metadata: admin() }));
    expect(bad.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(bad.details).toContain('spec.source.repo');
    expect(bad.details).toContain('spec.prefetch[0]: expected a node name or "*" (every node), got "Bad_Node"');
    const missing = await grpcError(callUnary(client, client.getArtifact, { namespace: 'team-a', name: 'nope' }, { metadata: admin() }));
    expect(missing.code).toBe(GrpcStatus.NOT_FOUND);
  });

  it('resolves a hub repository to a manifest and fetches it into a node cache, verified', async () => {
    await callUnary(client, client.createArtifact, spec('llm', { ignorePatterns: ['original/*'], prefetch: ['n1'] }), { metadata: admin() });
    const ready = await until('llm', (a) => a.status?.nodes.find((n) => n.node === 'n1')?.state === 'Ready', 'is Ready on n1');
    expect(ready.status).toMatchObject({ phase: ArtifactPhase.ARTIFACT_PHASE_READY, fileCount: 2, totalBytes: WEIGHTS + '{"num_hidden_layers":2}'.length });
    expect(ready.status!.commit).toMatch(/^[0-9a-f]{40}$/);
    const { manifest } = await callUnary(client, client.getManifest, { namespace: 'team-a', name: 'llm' }, { metadata: admin() });
    expect(manifest!.text.split('\n')[0]).toBe('gpustack-manifest v1');
    expect(`sha256:${createHash('sha256').update(manifest!.text).digest('hex')}`).toBe(ready.status!.manifestDigest);
    expect(manifest!.files.map((f) => f.path)).toEqual(['config.json', 'model.safetensors']);
    const copy = ready.status!.nodes.find((n) => n.node === 'n1')!;
    expect(copy).toMatchObject({ percent: 100, bytesDone: ready.status!.totalBytes, manifestDigest: ready.status!.manifestDigest });
    // The copy is laid out as the Hugging Face cache: snapshots/<commit>/<path>.
    expect(copy.path).toContain(`snapshots/${ready.status!.commit}`);
    const weights = readFileSync(join(copy.path, 'model.safetensors'));
    const { sha256 } = await hub.hashesOf('acme/llm', 'main', 'model.safetensors');
    expect(createHash('sha256').update(weights).digest('hex')).toBe(sha256);
    expect(ready.status!.nodes.map((n) => n.node)).toEqual(['n1']);
  });

  it('fills a second node from the first as a peer: the origin serves the weights once', async () => {
    const before = hub.stats.bytesServed('acme/llm', 'model.safetensors');
    await callUnary(client, client.createArtifact, spec('llm-copy', { ignorePatterns: ['original/*'], prefetch: ['n2'] }), { metadata: admin() });
    const ready = await until('llm-copy', (a) => a.status?.nodes.find((n) => n.node === 'n2')?.state === 'Ready', 'is Ready on n2');
    const copy = ready.status!.nodes.find((n) => n.node === 'n2')!;
    expect(copy.peerBytes).toBeGreaterThanOrEqual(WEIGHTS);
    expect(hub.stats.bytesServed('acme/llm', 'model.safetensors') - before).toBe(0);
  });

  it('says why a revision does not resolve, and turns Degraded, keeping its manifest, when the hub goes down later', async () => {
    await callUnary(client, client.createArtifact, spec('ghost', { revision: 'no-such-branch' }), { metadata: admin() });
    const failed = await until('ghost', (a) => a.status?.phase === ArtifactPhase.ARTIFACT_PHASE_FAILED, 'is Failed');
    expect(failed.status!.reason).toBe('RevisionNotFound');
    expect(failed.status!.message).toContain('no-such-branch');

    const before = await artifact('llm');
    hub.setFault('acme/llm', undefined, { status: 503 });
    const degraded = await until('llm', (a) => a.status?.phase === ArtifactPhase.ARTIFACT_PHASE_DEGRADED, 'is Degraded');
    expect(degraded.status).toMatchObject({ reason: 'SourceUnavailable', manifestDigest: before.status!.manifestDigest });
    expect(degraded.status!.nodes.find((n) => n.node === 'n1')?.state).toBe('Ready');
    hub.faults.clear();
    await until('llm', (a) => a.status?.phase === ArtifactPhase.ARTIFACT_PHASE_READY, 'is Ready again');
  });

  it('fetches an artifact for a pod placed on the node, without prefetch, and leases its tree until the pod is gone', async () => {
    const caches = service.app.get(NodeCachesService);
    const workloads = await KvStore.open(connection.jetstream(), Buckets.workloads(`md${process.pid}`), Workload);
    await callUnary(client, client.createArtifact, spec('for-pods', { ignorePatterns: ['original/*'] }), { metadata: admin() });
    const resolved = await until('for-pods', (a) => a.status?.phase === ArtifactPhase.ARTIFACT_PHASE_READY, 'is resolved');
    expect(resolved.status!.nodes).toEqual([]);
    const pod = Workload.fromPartial({
      spec: { name: 'chat', namespace: 'team-a', template: { engine: { deployment: 'chat', artifact: 'for-pods' } } },
      status: { phase: WorkloadPhase.WORKLOAD_PHASE_ADMITTED, placements: [{ node: 'n2', podSet: 'server' }] },
    });
    await workloads.put('team-a.chat', pod);
    const ready = await until('for-pods', (a) => a.status?.nodes.find((n) => n.node === 'n2')?.state === 'Ready', 'is Ready on n2');
    expect(ready.status!.nodes.map((n) => n.node)).toEqual(['n2']);
    await waitFor('the lease on the tree', async () => caches.leasesOf('n2').get('team-a.for-pods') === ready.status!.manifestDigest || undefined, { timeoutMs: 10_000 });
    expect(caches.cacheOf('n2')!.trees().find((t) => t.digest === ready.status!.manifestDigest)?.inUse).toBe(1);
    await workloads.put('team-a.chat', { ...pod, status: { ...pod.status!, phase: WorkloadPhase.WORKLOAD_PHASE_FINISHED } });
    await waitFor('the lease released', async () => !caches.leasesOf('n2').has('team-a.for-pods') || undefined, { timeoutMs: 10_000 });
    expect(caches.cacheOf('n2')!.trees().find((t) => t.digest === ready.status!.manifestDigest)?.inUse).toBe(0);
  });

  it('describes the model from its config.json and safetensors headers once resolved, after the hub comes back', async () => {
    hub.setFault('acme/qwen', 'config.json', { status: 503 });
    await callUnary(client, client.createArtifact, spec('qwen', { source: { kind: ArtifactSourceKind.ARTIFACT_SOURCE_KIND_HUGGINGFACE, repo: 'acme/qwen', endpoint: '', url: '', path: '' } }), { metadata: admin() });
    const resolved = await until('qwen', (a) => a.status?.phase === ArtifactPhase.ARTIFACT_PHASE_READY, 'is Ready');
    // The hub refusing config.json is an outage, not a verdict on the artifact: no error is stored.
    await waitFor('a description attempt', () => hub.stats.requests.some((r) => r.repo === 'acme/qwen' && r.file === 'config.json' && r.status === 503));
    expect((await artifact('qwen')).status).toMatchObject({ estimateError: '', modelDigest: '' });
    expect(resolved.status!.model).toBeUndefined();
    hub.faults.clear();
    const described = await until('qwen', (a) => a.status?.modelDigest === a.status?.manifestDigest, 'is described');
    expect(described.status!.estimateError).toBe('');
    expect(described.status!.model).toMatchObject({
      weightsBytes: qwen.dataBytes,
      weightsSource: 'safetensors-headers',
      bytesByDtype: { BF16: qwen.dataBytes },
      shape: { architecture: 'qwen2', layers: 28, hiddenSize: 3584, attentionHeads: 28, kvHeads: 4, headDim: 128, maxContextLength: 131072, attentionBias: true },
    });
    // Two range reads per shard, a few KiB each: the 15 GB of weights are never read.
    const shardReads = hub.stats.requests.filter((r) => r.repo === 'acme/qwen' && r.file?.endsWith('.safetensors'));
    expect(shardReads.reduce((n, r) => n + r.bytes, 0)).toBeLessThan(1024 * 1024);
  });

  it('stores why an artifact is not a model, without failing it', async () => {
    const llm = await until('llm', (a) => a.status?.modelDigest !== '', 'is described');
    expect(llm.status!.phase).not.toBe(ArtifactPhase.ARTIFACT_PHASE_FAILED);
    expect(llm.status!.model).toBeUndefined();
    expect(llm.status!.estimateError).toMatch(/^INVALID_MODEL_CONFIG: config\.json: /);
  });

  it("keeps a pod's lease through a restart of the node role, and releases on the first pass after one a lease no pod needs any more", async () => {
    const workloads = await KvStore.open(connection.jetstream(), Buckets.workloads(`md${process.pid}`), Workload);
    const digest = (await artifact('for-pods')).status!.manifestDigest;
    const pod = Workload.fromPartial({
      spec: { name: 'chat2', namespace: 'team-a', template: { engine: { deployment: 'chat2', artifact: 'for-pods' } } },
      status: { phase: WorkloadPhase.WORKLOAD_PHASE_ADMITTED, placements: [{ node: 'n2', podSet: 'server' }] },
    });
    await workloads.put('team-a.chat2', pod);
    await waitFor('the lease on the tree', async () => service.app.get(NodeCachesService).leasesOf('n2').get('team-a.for-pods') === digest || undefined, { timeoutMs: 10_000 });
    const restart = async () => {
      await service.close();
      service = await startService({ service: 'model-delivery', config, module: AppModule.forRoot(config) });
    };

    // The pod runs on through the restart: the new process holds the same lease, not a second one.
    await restart();
    const persisted = await readPersistedLeases(join(cacheDir, 'n2'));
    expect(persisted).toEqual([expect.objectContaining({ digest, holder: 'team-a.for-pods' })]);
    const caches = service.app.get(NodeCachesService);
    await waitFor('the lease adopted', async () => caches.leasesOf('n2').get('team-a.for-pods') === digest || undefined, { timeoutMs: 10_000 });
    await caches.idle();
    expect(caches.cacheOf('n2')!.trees().find((t) => t.digest === digest)?.inUse).toBe(1);
    expect(await readPersistedLeases(join(cacheDir, 'n2'))).toEqual(persisted);

    // The pod ends while model delivery is down: nothing else names the artifact for n2, and the
    // first pass of the next process opens n2's cache only to release the lease.
    await service.close();
    await workloads.put('team-a.chat2', { ...pod, status: { ...pod.status!, phase: WorkloadPhase.WORKLOAD_PHASE_FINISHED } });
    service = await startService({ service: 'model-delivery', config, module: AppModule.forRoot(config) });
    await waitFor('the stale lease released', async () => ((await readPersistedLeases(join(cacheDir, 'n2'))).length === 0) || undefined, { timeoutMs: 10_000 });
    expect(service.app.get(NodeCachesService).cacheOf('n2')!.trees().find((t) => t.digest === digest)?.inUse).toBe(0);
  });

  it('refuses a second artifact of the same name: the spec never changes', async () => {
    const again = await grpcError(callUnary(client, client.createArtifact, spec('llm', { revision: 'v2' }), { metadata: admin() }));
    expect(again.code).toBe(GrpcStatus.ALREADY_EXISTS);
    expect(again.details).toContain('its spec cannot change');
  });
});
