// A deployment that names a ModelArtifact on the Kubernetes runtime: the scheduler (RUNTIME=
// kubernetes) against the API simulator, and model delivery as its built process (ROLE=all, the
// caches of gpu-0 and gpu-1) fetching from the hub simulator, all on one real nats-server. No Pod
// is made while the replica's node downloads (its record says how far); once the node's copy is
// Ready the Pod mounts it read-only by hostPath and loads it offline. The test acts as the kubelet.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { credentials, Metadata } from '@grpc/grpc-js';
import { ArtifactNodeStatus, ArtifactSourceKind, Buckets, ModelDeliveryServiceClient, PodRuntimeStatus } from '@gpufleet/contracts';
import { callUnary } from '@gpufleet/grpc-kit';
import { KvStore } from '@gpufleet/messaging';
import { freshServiceArgs } from '@gpufleet/process-kit';
import { freePort, ProcessGroup, startHubSimulator, waitFor, type HubSimulator, type KubeApiServer } from '@gpufleet/testing';
import { KubeRuntimeHarness, running } from '../../__fixtures__/kube-runtime-harness';
import { deployment } from '../../__fixtures__/requests';

jest.setTimeout(90_000);

const REPO_ROOT = resolve(__dirname, '../../../../..');
const NS = 'gpufleet';
const WAIT = { timeoutMs: 30_000, intervalMs: 50 };
const WEIGHTS = 'model.safetensors';

let k: KubeRuntimeHarness;
let hub: HubSimulator;
let delivery: ModelDeliveryServiceClient;
const group = new ProcessGroup();

const deliveryLog = (): string => readFileSync(join(k.dir, 'model-delivery.log'), 'utf8').slice(-3000);

beforeAll(async () => {
  k = await KubeRuntimeHarness.start({ env: { KUBE_WORKLOAD_NAMESPACE: NS } });
  hub = await startHubSimulator({
    hashCacheDir: null,
    repos: [{ id: 'acme/chat', commits: [{ files: [{ path: 'config.json', content: { bytes: '{"num_hidden_layers":2}' } }, { path: WEIGHTS, content: { seed: 'chat', size: 2 * 1024 * 1024 } }] }] }],
  });
  // Each response stops after 1 KiB and hangs: the copy stays Downloading (and never fails, since every try brings bytes) until the spec lifts it.
  hub.setFault('acme/chat', WEIGHTS, { stallAfterBytes: 1024 });
  const h = k.h;
  const [grpc, http] = [await freePort(), await freePort()];
  const md = group.start({
    name: 'model-delivery',
    command: process.execPath,
    args: await freshServiceArgs('model-delivery', REPO_ROOT),
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: k.dir,
      GPUFLEET_CLUSTER: h.cluster,
      NATS_URL: h.nats.url,
      HOST: '127.0.0.1',
      GPUFLEET_ADMIN_TOKEN: h.adminToken,
      ROLE: 'all',
      NODE_NAMES: 'gpu-0,gpu-1',
      CACHE_DIR: join(k.dir, 'model-cache'),
      HF_ENDPOINT: hub.url,
      GRPC_PORT: String(grpc),
      HTTP_PORT: String(http),
      DOWNLOAD_STALL_TIMEOUT_S: '1',
      DOWNLOAD_BACKOFF_MIN_S: '0.05',
      DOWNLOAD_BACKOFF_MAX_S: '0.2',
      LEADER_RENEW_S: '0.2',
      LEADER_EXPIRE_S: '1',
      LOG_LEVEL: 'info',
    },
    logFile: join(k.dir, 'model-delivery.log'),
  });
  await waitFor('model-delivery /readyz', async () => {
    if (md.child.exitCode !== null) throw new Error(`model-delivery exited with ${md.child.exitCode}: ${deliveryLog()}`);
    return (await fetch(`http://127.0.0.1:${http}/readyz`).catch(() => undefined))?.status === 200 || undefined;
  }, { timeoutMs: 60_000, intervalMs: 100 });
  delivery = new ModelDeliveryServiceClient(`127.0.0.1:${grpc}`, credentials.createInsecure());
}, 120_000);

afterAll(async () => {
  delivery?.close();
  await group.stopAll(10_000);
  await hub?.close();
  await k?.close();
});

function admin(): Metadata {
  return k.h.admin();
}

async function weightsReady(): Promise<{ status: boolean; reason: string; message: string } | undefined> {
  const { deployment: d } = await callUnary(k.h.clients.deployments, k.h.clients.deployments.getDeployment, { namespace: 'default', name: 'chat' }, { metadata: admin() });
  return d?.status?.conditions.find((c) => c.type === 'WeightsReady');
}

it('holds the Pod while the node downloads (WEIGHTS_PENDING with its percent), then mounts the Ready copy read-only and loads it offline', async () => {
  const h = k.h;
  const js = h.nc.jetstream();
  const records = await KvStore.open(js, Buckets.pods(h.cluster), PodRuntimeStatus);
  const copies = await KvStore.open(js, Buckets.artifactNodes(h.cluster), ArtifactNodeStatus);
  await callUnary(
    delivery,
    delivery.createArtifact,
    { spec: { name: 'chat-weights', namespace: 'default', source: { kind: ArtifactSourceKind.ARTIFACT_SOURCE_KIND_HUGGINGFACE, repo: 'acme/chat', endpoint: '', url: '', path: '' }, revision: '', allowPatterns: [], ignorePatterns: [], expectedDigest: '', tokenFromSecret: undefined, pinned: false, labels: {}, prefetch: [] } },
    { metadata: admin() },
  );
  // The scheduler accepts the deployment once it mirrors the artifact.
  await waitFor('the deployment accepted', () =>
    callUnary(h.clients.deployments, h.clients.deployments.createDeployment, { spec: deployment({ name: 'chat', model: '', artifact: 'chat-weights', roles: [{ role: 'server', replicas: 1, size: 1, resources: { accelerator: { whole: 1 }, vcpu: 2, memoryMib: 4096 } }] }) }, { metadata: admin() }).catch((err: Error) => {
      if (/ModelArtifact/.test(err.message)) return undefined;
      throw err;
    }), WAIT);

  // Placed, its node's cache fetching (stalled): no Pod, a Starting record with the progress, WeightsReady False.
  const waiting = await waitFor('the pod record waiting for its weights', async () => {
    const all = (await records.list()).map((v) => v.value);
    return all.length === 1 && all[0].state === 'Starting' && /^WEIGHTS_PENDING: waiting for weights: Downloading \d+% \(\d+ of \d+ bytes\) \(artifact default\/chat-weights\)$/.test(all[0].message) ? all[0] : undefined;
  }, WAIT).catch((err: Error) => {
    throw new Error(`${err.message}; delivery log: ${deliveryLog()}`);
  });
  expect(await k.pods(NS)).toEqual([]);
  const downloading = await waitFor('WeightsReady False', async () => ((await weightsReady())?.reason === 'Downloading' ? weightsReady() : undefined), WAIT);
  expect(downloading).toMatchObject({ status: false, message: expect.stringMatching(/^server 0 on gpu-\d: waiting for weights: Downloading \d+%/) });

  // The hub recovers: the copy turns Ready and the Pod is made on it.
  hub.setFault('acme/chat', WEIGHTS, undefined);
  const copy = await waitFor('the node’s copy Ready', async () => {
    const c = (await copies.get(`${waiting.node}.default.chat-weights`))?.value;
    return c?.state === 'Ready' ? c : undefined;
  }, WAIT);
  const [pod] = await waitFor('the Pod', async () => {
    const list = await k.pods(NS);
    return list.length === 1 ? list : undefined;
  }, WAIT);
  expect(pod.spec!.nodeName).toBe(waiting.node);
  const engine = pod.spec!.containers[0];
  expect(copy.path).toMatch(/\/hf\/models--acme--chat\/snapshots\/[0-9a-f]{40}$/);
  expect(engine.args!.slice(0, 2)).toEqual(['serve', copy.path]);
  const repoFolder = copy.path.slice(0, copy.path.indexOf('/snapshots/'));
  const hubCache = repoFolder.slice(0, repoFolder.lastIndexOf('/'));
  expect(pod.spec!.volumes).toContainEqual({ name: 'weights', hostPath: { path: repoFolder, type: 'Directory' } });
  expect(engine.volumeMounts).toContainEqual({ name: 'weights', mountPath: repoFolder, readOnly: true });
  expect(Object.fromEntries((engine.env ?? []).map((e) => [e.name, e.value]))).toMatchObject({ HF_HUB_CACHE: hubCache, HF_HUB_OFFLINE: '1' });
  // What the kubelet would mount is the cache's verified tree on that node (this machine here).
  expect(existsSync(join(copy.path, WEIGHTS))).toBe(true);
  expect(await k.ok('get', 'pod', pod.metadata!.name!, '-n', NS, '-o', 'jsonpath={.spec.volumes[?(@.name=="weights")].hostPath.path} {.spec.containers[0].volumeMounts[?(@.name=="weights")].readOnly}')).toBe(`${repoFolder} true`);

  // The kubelet runs it: Ready, and WeightsReady True.
  k.api.put(running(pod, '10.0.0.9') as Parameters<KubeApiServer['put']>[0]);
  await waitFor('the pod record Ready', async () => ((await records.list()).map((v) => v.value.state).join() === 'Ready' ? true : undefined), WAIT);
  await waitFor('WeightsReady True', async () => ((await weightsReady())?.status ? true : undefined), WAIT);
});

