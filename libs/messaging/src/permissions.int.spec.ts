import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { connect, JSONCodec, NatsConnection } from 'nats';
import { Buckets, Events, NodeInventory, PodRuntimeStatus, ApiKeyRecord, EVENTS_STREAM, scopedSubjectOf, subjectOf, User } from '@gpufleet/contracts';
import { startNats, waitFor, type RunningServer } from '@gpufleet/testing';
import { connectNats, createNkeyUser, natsConnectionOptions } from './connection';
import { ensureEventsStream } from './events';
import { KvStore } from './kv-store';
import { NatsIdentitySpec, natsAuthorizationConfig, natsPermissions } from './permissions';

const CLUSTER = 'perm';
const DENIED = /permissions violation/i;

/**
 * A real nats-server started with the configuration natsAuthorizationConfig writes, and one
 * client per component identity: what each may and may not do on NATS (docs/security.md).
 */
describe('per-component NATS identities (real nats-server with the generated authorization)', () => {
  const identities: Record<string, NatsIdentitySpec> = {
    control: { component: 'control' },
    router: { component: 'router' },
    agentA: { component: 'agent', nodes: ['node-a', 'node-a2'] },
    runtimeA: { component: 'runtime', nodes: ['node-a'] },
  };
  let dir: string;
  let nats: RunningServer;
  const nc: Record<string, NatsConnection> = {};
  const seeds: Record<string, string> = {};

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gpufleet-nats-auth-'));
    const users = Object.entries(identities).map(([name, spec]) => {
      const { seed, publicKey } = createNkeyUser();
      seeds[name] = join(dir, `${name}.nk`);
      writeFileSync(seeds[name], seed, { mode: 0o600 });
      return { nkey: publicKey, permissions: natsPermissions(spec, CLUSTER, publicKey) };
    });
    const configFile = join(dir, 'nats-server.conf');
    writeFileSync(configFile, natsAuthorizationConfig(users));
    nats = await startNats({ configFile });
    for (const name of Object.keys(identities)) {
      nc[name] = await connectNats({ servers: [nats.url], name, nkeySeedFile: seeds[name] });
    }
    // The control plane creates the events stream and the buckets; the router its api-keys.
    await ensureEventsStream(await nc.control.jetstreamManager());
    for (const bucket of [Buckets.nodes, Buckets.pods, Buckets.ledger, Buckets.workloads, Buckets.deployments]) {
      await KvStore.open(nc.control.jetstream(), bucket(CLUSTER), NodeInventory);
    }
    await KvStore.open(nc.router.jetstream(), Buckets.apiKeys(CLUSTER), ApiKeyRecord);
  });

  afterAll(async () => {
    for (const c of Object.values(nc)) await c.close();
    await nats?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const nodeRecord = (nodeName: string) => NodeInventory.fromPartial({ nodeName, cluster: CLUSTER, generation: 1 });
  const rawPut = (who: string, bucket: string, key: string) => nc[who].jetstream().publish(`$KV.${bucket}.${key}`, JSONCodec().encode({}));

  it('refuses a client without an identity', async () => {
    await expect(connect({ servers: [nats.url], reconnect: false })).rejects.toThrow(/authorization violation/i);
  });

  it('lets an agent write its own nodes’ records and read the bucket, but not another node’s record', async () => {
    const nodes = await KvStore.open(nc.agentA.jetstream(), Buckets.nodes(CLUSTER), NodeInventory);
    await nodes.put('node-a', nodeRecord('node-a'));
    await nodes.put('node-a2', nodeRecord('node-a2'));
    await expect(nodes.put('node-b', nodeRecord('node-b'))).rejects.toThrow(DENIED);
    await nc.control.jetstream().publish(`$KV.${Buckets.nodes(CLUSTER)}.node-b`, JSONCodec().encode(NodeInventory.toJSON(nodeRecord('node-b'))));
    expect((await nodes.get('node-b'))?.value.nodeName).toBe('node-b');
    expect(await nodes.keys()).toEqual(['node-a', 'node-a2', 'node-b']);
  });

  it("delivers an agent's heartbeats of its own nodes only: another node's is refused by the server", async () => {
    const seen: string[] = [];
    const sub = nc.control.subscribe(subjectOf(Events.heartbeat, CLUSTER), { callback: (_err, msg) => seen.push(msg.subject) });
    await nc.control.flush();
    nc.agentA.publish(scopedSubjectOf(Events.heartbeat, CLUSTER, 'node-b'), JSONCodec().encode({ nodeName: 'node-b' }));
    nc.agentA.publish(scopedSubjectOf(Events.heartbeat, CLUSTER, 'node-a'), JSONCodec().encode({ nodeName: 'node-a' }));
    await nc.agentA.flush();
    await waitFor('the own heartbeat', () => seen.length > 0 || undefined);
    await nc.control.flush();
    sub.unsubscribe();
    expect(seen).toEqual([scopedSubjectOf(Events.heartbeat, CLUSTER, 'node-a')]);
  });

  it('refuses an agent writing an api-keys record, even as a raw KV publish', async () => {
    await expect(rawPut('agentA', Buckets.apiKeys(CLUSTER), 'k1')).rejects.toThrow(DENIED);
    await expect(rawPut('runtimeA', Buckets.apiKeys(CLUSTER), 'k1')).rejects.toThrow(DENIED);
  });

  it('lets only the router write api-keys records: not even the control plane', async () => {
    await expect(rawPut('router', Buckets.apiKeys(CLUSTER), 'k1')).resolves.toMatchObject({ stream: `KV_${Buckets.apiKeys(CLUSTER)}` });
    await expect(rawPut('control', Buckets.apiKeys(CLUSTER), 'k2')).rejects.toThrow(DENIED);
    const keys = await KvStore.open(nc.router.jetstream(), Buckets.apiKeys(CLUSTER), ApiKeyRecord);
    expect(await keys.keys()).toEqual(['k1']);
  });

  it('lets the router read the access buckets the control plane writes, and nobody else write them', async () => {
    const users = await KvStore.open(nc.control.jetstream(), Buckets.accessUsers(CLUSTER), User);
    await users.put('alice', User.fromPartial({ name: 'alice' }));
    const seen = await KvStore.open(nc.router.jetstream(), Buckets.accessUsers(CLUSTER), User);
    expect((await seen.get('alice'))?.value.name).toBe('alice');
    for (const who of ['router', 'agentA', 'runtimeA']) {
      await expect(rawPut(who, Buckets.accessUsers(CLUSTER), 'mallory')).rejects.toThrow(DENIED);
      await expect(rawPut(who, Buckets.accessBindings(CLUSTER), 'mallory.admin._')).rejects.toThrow(DENIED);
    }
  });

  it('lets the router publish usage, which the control plane receives', async () => {
    const got = new Promise<string>((resolve) => {
      const sub = nc.control.subscribe(subjectOf(Events.usage, CLUSTER), { max: 1, callback: (_err, msg) => resolve(msg.subject) });
      void sub;
    });
    await nc.control.flush();
    nc.router.publish(subjectOf(Events.usage, CLUSTER), JSONCodec().encode({}));
    await expect(got).resolves.toBe(subjectOf(Events.usage, CLUSTER));
  });

  it('lets a node runtime write its own node’s pod status only, and read what it follows', async () => {
    const pods = await KvStore.open(nc.runtimeA.jetstream(), Buckets.pods(CLUSTER), PodRuntimeStatus);
    await pods.put('node-a.team.job.main.0.0', PodRuntimeStatus.fromPartial({}));
    await expect(pods.put('node-b.team.job.main.0.0', PodRuntimeStatus.fromPartial({}))).rejects.toThrow(DENIED);
    await expect(rawPut('runtimeA', Buckets.nodes(CLUSTER), 'node-a')).rejects.toThrow(DENIED);
    // A watch (ordered consumer, flow control) of a bucket it reads.
    const workloads = await KvStore.open(nc.runtimeA.jetstream(), Buckets.workloads(CLUSTER), NodeInventory);
    const watch = workloads.watch(() => undefined);
    await watch.ready;
    watch.stop();
  });

  it('lets no identity but the control plane delete or purge a stream', async () => {
    const stream = `KV_${Buckets.nodes(CLUSTER)}`;
    for (const who of ['agentA', 'runtimeA', 'router']) {
      const jsm = await nc[who].jetstreamManager();
      await expect(jsm.streams.delete(stream)).rejects.toThrow(DENIED);
      await expect(jsm.streams.purge(stream)).rejects.toThrow(DENIED);
      await expect(jsm.streams.delete(EVENTS_STREAM)).rejects.toThrow(DENIED);
      await expect(jsm.streams.delete(`KV_${Buckets.apiKeys(CLUSTER)}`)).rejects.toThrow(DENIED);
    }
    const control = await nc.control.jetstreamManager();
    await control.streams.add({ name: 'SCRATCH', subjects: ['scratch.>'] });
    await expect(control.streams.delete('SCRATCH')).resolves.toBe(true);
  });

  it('lets a node identity create no bucket: it waits for the owner, then says why', async () => {
    const ledger = Buckets.ledger(CLUSTER);
    await (await nc.control.jetstreamManager()).streams.delete(`KV_${ledger}`);
    await expect(KvStore.open(nc.runtimeA.jetstream(), ledger, NodeInventory, { openTimeoutMs: 300 })).rejects.toThrow(/may not create the bucket/);
    // Given time, it opens the bucket once the control plane has created it.
    const waiting = KvStore.open(nc.runtimeA.jetstream(), ledger, NodeInventory, { openTimeoutMs: 10_000 });
    await new Promise((r) => setTimeout(r, 300));
    await KvStore.open(nc.control.jetstream(), ledger, NodeInventory);
    await expect(waiting).resolves.toMatchObject({ bucket: ledger });
    // A bucket it may not read at all is refused at once, not waited for.
    const started = Date.now();
    await expect(KvStore.open(nc.agentA.jetstream(), Buckets.apiKeys(CLUSTER), ApiKeyRecord)).rejects.toThrow(/may not use the bucket/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('keeps replies private: an identity cannot subscribe to another’s inbox', async () => {
    const refused = new Promise<Error | null>((resolve) => {
      nc.agentA.subscribe('_INBOX.>', { callback: (err) => resolve(err) });
    });
    await expect(refused).resolves.toMatchObject({ message: expect.stringMatching(DENIED) });
    // Its own inbox, named after its public key, works: every request above got its reply there.
    expect(natsConnectionOptions({ servers: [nats.url], name: 'x', nkeySeedFile: seeds.agentA }).inboxPrefix).toMatch(/^_INBOX\.U[A-Z2-7]{55}$/);
  });
});
