// The whole agent with DEVICE_PLUGIN=on reads the kubelet's pod-resources API (PodResourcesKubelet,
// a real gRPC server on a unix socket) and reports it in the kubelet-devices bucket, under its own
// NATS identity on a nats-server that enforces the generated per-component permissions.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NatsConnection } from 'nats';
import { Buckets, KubeletDevices, NodeInventory } from '@gpufleet/contracts';
import { connectNats, createNkeyUser, ensureEventsStream, KvStore, natsAuthorizationConfig, natsPermissions } from '@gpufleet/messaging';
import { DevicePluginKubelet, PodResourcesKubelet, startNats, waitFor, type RunningServer } from '@gpufleet/testing';
import { startAgent, type AgentUnderTest } from '../__fixtures__/agent-harness';

jest.setTimeout(60_000);

const CLUSTER = 'podres';
const FLEET = `cluster: ${CLUSTER}
nodes:
  - namePrefix: h100-
    count: 2
    accelerators: { product: NVIDIA H100 80GB HBM3, count: 8 }
`;
const WAIT = { timeoutMs: 15_000, intervalMs: 50 };

describe('agent with DEVICE_PLUGIN=on: pod-resources reported to the scheduler', () => {
  let dir: string;
  let nats: RunningServer;
  let control: NatsConnection;
  let agentSeed: string;
  let devicePlugins: DevicePluginKubelet;
  let podResources: PodResourcesKubelet;
  let agent: AgentUnderTest | undefined;
  let reports: KvStore<KubeletDevices>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gpufleet-agent-podres-it-'));
    writeFileSync(join(dir, 'fleet.yaml'), FLEET);
    const controlUser = createNkeyUser();
    const agentUser = createNkeyUser();
    writeFileSync(join(dir, 'control.nk'), controlUser.seed, { mode: 0o600 });
    agentSeed = join(dir, 'agent.nk');
    writeFileSync(agentSeed, agentUser.seed, { mode: 0o600 });
    const configFile = join(dir, 'nats-server.conf');
    writeFileSync(
      configFile,
      natsAuthorizationConfig([
        { nkey: controlUser.publicKey, permissions: natsPermissions({ component: 'control' }, CLUSTER, controlUser.publicKey) },
        { nkey: agentUser.publicKey, permissions: natsPermissions({ component: 'agent', nodes: ['h100-1'] }, CLUSTER, agentUser.publicKey) },
      ]),
    );
    nats = await startNats({ configFile });
    // The scheduler's part: the events stream and the buckets exist before the agent writes.
    control = await connectNats({ servers: [nats.url], name: 'control', nkeySeedFile: join(dir, 'control.nk') });
    await ensureEventsStream(await control.jetstreamManager());
    await KvStore.open(control.jetstream(), Buckets.nodes(CLUSTER), NodeInventory);
    reports = await KvStore.open(control.jetstream(), Buckets.kubeletDevices(CLUSTER), KubeletDevices);
    devicePlugins = await DevicePluginKubelet.start();
    podResources = await PodResourcesKubelet.start();
  });

  afterAll(async () => {
    await agent?.close();
    await podResources?.stop();
    await devicePlugins?.stop();
    await control?.close();
    await nats?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes what the kubelet assigned and can allocate, follows changes, and keeps the last report while the kubelet is away', async () => {
    const devices = () => devicePlugins.devices('gpufleet.io/nvidia-gpu');
    agent = await startAgent({
      GPUFLEET_CLUSTER: CLUSTER,
      NATS_URL: nats.url,
      NATS_NKEY_SEED_FILE: agentSeed,
      GPUFLEET_PROVIDERS: 'simulated',
      GPUFLEET_FLEET_FILE: join(dir, 'fleet.yaml'),
      NODE_NAME: 'h100-1',
      DEVICE_PLUGIN: 'on',
      DEVICE_PLUGIN_DIR: devicePlugins.dir,
      POD_RESOURCES_DIR: podResources.dir,
      POD_RESOURCES_INTERVAL_S: '1',
    });
    const ids = (await devices()).map((d) => d.ID);
    podResources.allocatable = [{ resourceName: 'gpufleet.io/nvidia-gpu', deviceIds: ids.slice(0, 7), topology: undefined }, { resourceName: 'nvidia.com/gpu', deviceIds: ['other'], topology: undefined }];
    podResources.assign('gpufleet', 'default-d-0', 'engine', 'gpufleet.io/nvidia-gpu', [ids[5]]);
    podResources.assign('gpufleet', 'default-d-0', 'engine', 'example.com/nic', ['nic-0']);

    const first = await waitFor('the first report', async () => {
      const r = (await reports.get('h100-1'))?.value;
      return r && r.assigned.length > 0 ? r : undefined;
    }, WAIT);
    // gpufleet.io resources only.
    expect(first).toMatchObject({
      node: 'h100-1',
      allocatable: [{ resource: 'gpufleet.io/nvidia-gpu', deviceIds: [...ids.slice(0, 7)].sort() }],
      assigned: [{ namespace: 'gpufleet', pod: 'default-d-0', container: 'engine', resource: 'gpufleet.io/nvidia-gpu', deviceIds: [ids[5]] }],
      truncated: false,
    });
    const revision = (await reports.get('h100-1'))!.revision;

    // Nothing changed: nothing written.
    await new Promise((r) => setTimeout(r, 2_500));
    expect((await reports.get('h100-1'))!.revision).toBe(revision);

    // A second Pod: reported within an interval or two.
    podResources.assign('gpufleet', 'default-e-0', 'engine', 'gpufleet.io/nvidia-gpu', [ids[1], ids[2]]);
    const second = await waitFor('the second Pod reported', async () => {
      const r = (await reports.get('h100-1'))?.value;
      return r && r.assigned.length === 2 ? r : undefined;
    }, WAIT);
    expect(second.assigned[1]).toMatchObject({ pod: 'default-e-0', deviceIds: [ids[1], ids[2]].sort() });

    // The kubelet away: the last report stays, the agent stays ready.
    await podResources.stop();
    await new Promise((r) => setTimeout(r, 2_000));
    expect((await reports.get('h100-1'))!.value.assigned).toHaveLength(2);
    expect((await agent.readiness()).status).toBe(200);
  });

  it("may write only its own node's record: another node's is refused by the server", async () => {
    const nc = await connectNats({ servers: [nats.url], name: 'agent', nkeySeedFile: agentSeed });
    try {
      const store = await KvStore.open(nc.jetstream(), Buckets.kubeletDevices(CLUSTER), KubeletDevices);
      await expect(store.put('h100-0', KubeletDevices.fromPartial({ node: 'h100-0' }))).rejects.toThrow(/permissions violation/i);
    } finally {
      await nc.close();
    }
  });
});
