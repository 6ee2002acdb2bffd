import { Lease } from '@gpufleet/contracts';
import { RunningServer, startNats } from '@gpufleet/testing';
import { NatsConnection } from 'nats';
import { connectNats } from './connection';
import { KvStore } from './kv-store';

describe('KvStore.open on a real nats-server', () => {
  let nats: RunningServer;
  let nc: NatsConnection;
  beforeAll(async () => {
    nats = await startNats();
    nc = await connectNats({ servers: [nats.url], name: 'kv-open-spec' });
  });
  afterAll(async () => {
    await nc.close();
    await nats.dispose();
  });

  it('waits for a NATS that is down when a service starts, instead of failing its start', async () => {
    await nats.stop();
    const tries: string[] = [];
    // JetStream calls time out after 300 ms while the server is away; open() tries again.
    const opening = KvStore.open(nc.jetstream({ timeout: 300 }), 'spec-open-wait', Lease, { onOpenRetry: (err) => tries.push(err.message) });
    await new Promise((r) => setTimeout(r, 1_500));
    await nats.restart();
    const store = await opening;
    expect(tries.length).toBeGreaterThan(0);
    await store.put('k', Lease.fromPartial({ holder: 'x' }));
    expect((await store.get('k'))?.value.holder).toBe('x');
  });

  it('gives up after openTimeoutMs, naming the bucket', async () => {
    await nats.stop();
    try {
      const opening = KvStore.open(nc.jetstream({ timeout: 200 }), 'spec-open-give-up', Lease, { openTimeoutMs: 600 });
      await expect(opening).rejects.toThrow(/^opening KV bucket spec-open-give-up: /);
    } finally {
      await nats.restart();
    }
  });

  it('fails at once on an error no retry can fix', async () => {
    const started = Date.now();
    await expect(KvStore.open(nc.jetstream(), 'bad bucket name', Lease)).rejects.toThrow(/^opening KV bucket bad bucket name: /);
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});

describe('KvStore.watch when the bucket is recreated (revisions go backwards)', () => {
  let nats: RunningServer;
  let nc: NatsConnection;
  beforeAll(async () => {
    nats = await startNats();
    nc = await connectNats({ servers: [nats.url], name: 'kv-relist-spec' });
  });
  afterAll(async () => {
    await nc.close();
    await nats.dispose();
  });

  it('lists it again: new writes arrive, and keys that are gone are deleted', async () => {
    const js = nc.jetstream();
    const store = await KvStore.open(js, 'spec-relist', Lease);
    for (let i = 0; i < 5; i++) await store.put(`old-${i}`, Lease.fromPartial({ holder: `v${i}` }));
    const seen = new Map<string, string>();
    const relists: Array<{ lastSeen: number; bucketLast: number }> = [];
    const handle = store.watch(
      (change) => {
        if (change.kind === 'put') seen.set(change.key, change.value.holder);
        else seen.delete(change.key);
      },
      { retryMs: 100, revisionCheckMs: 200, onRelist: (info) => relists.push(info) },
    );
    await handle.ready;
    expect(seen.size).toBe(5);

    // Someone deletes and recreates the bucket: its revisions start again at 1.
    await (await js.jetstreamManager()).streams.delete('KV_spec-relist');
    const again = await KvStore.open(js, 'spec-relist', Lease);
    await again.put('new', Lease.fromPartial({ holder: 'fresh' }));
    await again.put('old-0', Lease.fromPartial({ holder: 'rewritten' }));

    const deadline = Date.now() + 15_000;
    while (!(seen.get('new') === 'fresh' && seen.size === 2) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    handle.stop();
    expect(Object.fromEntries(seen)).toEqual({ new: 'fresh', 'old-0': 'rewritten' });
    expect(relists).toEqual([{ lastSeen: 5, bucketLast: 2 }]);
  });
});

describe('KvStore on an entry that is not JSON', () => {
  let nats: RunningServer;
  let nc: NatsConnection;
  beforeAll(async () => {
    nats = await startNats();
    nc = await connectNats({ servers: [nats.url], name: 'kv-corrupt-spec' });
  });
  afterAll(async () => {
    await nc.close();
    await nats.dispose();
  });

  it('names the bucket and key but quotes none of the content (it may be a secret)', async () => {
    const store = await KvStore.open(nc.jetstream(), 'spec-corrupt', Lease);
    const kv = await nc.jetstream().views.kv('spec-corrupt');
    await kv.put('plain', new TextEncoder().encode('hf_s3cr3t_token'));
    await kv.put('cut', new TextEncoder().encode('{"data":{"token":"hf_s3cr3t_token"'));
    for (const key of ['plain', 'cut']) {
      const err = (await store.get(key).catch((e: unknown) => e)) as Error;
      expect(err.message).toMatch(new RegExp(`^CORRUPT_ENTRY: spec-corrupt/${key}: not JSON \\(`));
      expect(err.message).not.toContain('s3cr3t');
    }
  });
});
