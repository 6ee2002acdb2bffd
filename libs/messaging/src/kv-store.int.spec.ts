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
