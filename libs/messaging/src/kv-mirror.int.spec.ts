import { Lease } from '@gpufleet/contracts';
import { createLogger } from '@gpufleet/observability';
import { RunningServer, startNats } from '@gpufleet/testing';
import { NatsConnection } from 'nats';
import { connectNats } from './connection';
import { KvMirror } from './kv-mirror';
import { DELETE_ENTRY, KvStore, MODIFY_ATTEMPTS, RevisionConflictError } from './kv-store';

const logger = createLogger({ service: 'kv-mirror-spec', level: 'silent' });
const lease = (holder: string, term = 1) => Lease.fromPartial({ holder, term });

async function eventually(check: () => void, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}

describe('KvMirror and KvStore.modify on a real nats-server', () => {
  let nats: RunningServer;
  let nc: NatsConnection;
  let bucket = 0;
  const open = () => KvStore.open(nc.jetstream(), `spec-mirror-${++bucket}`, Lease, { storage: 'file' });

  beforeAll(async () => {
    nats = await startNats();
    nc = await connectNats({ servers: [nats.url], name: 'kv-mirror-spec' });
  });
  afterAll(async () => {
    await nc.close();
    await nats.dispose();
  });

  it('mirrors what the bucket held at start, then every change, under the mapped key', async () => {
    const store = await open();
    await store.put('ns.a', lease('a'));
    await store.put('ns.b', lease('b'));
    const mirror = new KvMirror(store, { logger, toKey: (k) => k.replace('.', '/') });
    await mirror.start();
    expect(mirror.ready).toBe(true);
    expect([...mirror.entries.keys()].sort()).toEqual(['ns/a', 'ns/b']);
    const heard: string[] = [];
    mirror.listen((key, change) => heard.push(`${change.kind} ${key} (${change.key})`));
    const revision = await store.put('ns.a', lease('a', 2));
    await store.delete('ns.b');
    await eventually(() => expect(heard).toEqual(['put ns/a (ns.a)', 'delete ns/b (ns.b)']));
    expect(mirror.get('ns/a')).toEqual({ value: lease('a', 2), revision });
    expect(mirror.get('ns/b')).toBeUndefined();
    mirror.stop();
  });

  it('keeps only the keys its filter accepts', async () => {
    const store = await open();
    await store.put('node-1', lease('x'));
    await store.put('node-2', lease('y'));
    const mirror = new KvMirror(store, { logger, filter: (k) => k === 'node-2' });
    await mirror.start();
    expect([...mirror.entries.keys()]).toEqual(['node-2']);
    mirror.stop();
  });

  it('waitFor resolves once the key arrives, or false after its timeout', async () => {
    const store = await open();
    const mirror = new KvMirror(store, { logger });
    await mirror.start();
    const arriving = mirror.waitFor('soon', 5_000);
    await store.put('soon', lease('s'));
    expect(await arriving).toBe(true);
    expect(await mirror.waitFor('soon', 10)).toBe(true);
    expect(await mirror.waitFor('never', 50)).toBe(false);
    mirror.stop();
  });

  it('a failing listener does not keep the others or the mirror from the change', async () => {
    const store = await open();
    const mirror = new KvMirror(store, { logger });
    await mirror.start();
    const heard: string[] = [];
    mirror.listen(() => {
      throw new Error('listener bug');
    });
    mirror.listen((key) => heard.push(key));
    await store.put('k', lease('k'));
    await eventually(() => expect(heard).toEqual(['k']));
    expect(mirror.get('k')?.value.holder).toBe('k');
    mirror.stop();
  });

  it('modify creates, updates and deletes with compare-and-set, and leaves the key alone on undefined', async () => {
    const store = await open();
    const created = await store.modify('k', (cur) => (cur ? undefined : lease('first')));
    expect(created?.value.holder).toBe('first');
    const updated = await store.modify('k', (cur) => cur && { ...cur.value, term: cur.value.term + 1 });
    expect(updated?.value.term).toBe(2);
    expect((await store.get('k'))?.revision).toBe(updated?.revision);
    const untouched = await store.modify('k', () => undefined);
    expect(untouched?.revision).toBe(updated?.revision);
    expect(await store.modify('k', () => DELETE_ENTRY)).toBeUndefined();
    expect(await store.get('k')).toBeUndefined();
  });

  it('modify re-reads and applies its change again when another writer got there first', async () => {
    const store = await open();
    await store.put('counter', lease('c', 0));
    // 20 concurrent increments: each must land exactly once.
    await Promise.all(Array.from({ length: 20 }, () => store.modify('counter', (cur) => ({ ...cur!.value, term: cur!.value.term + 1 }))));
    expect((await store.get('counter'))?.value.term).toBe(20);
  });

  it('modify tries a stale known entry first, then the stored one', async () => {
    const store = await open();
    const first = await store.put('k', lease('v1'));
    await store.put('k', lease('v2'));
    const seen: string[] = [];
    const result = await store.modify(
      'k',
      (cur) => {
        seen.push(cur?.value.holder ?? 'absent');
        return lease(`${cur?.value.holder}+`);
      },
      { known: { key: 'k', value: lease('v1'), revision: first } },
    );
    expect(seen).toEqual(['v1', 'v2']);
    expect(result?.value.holder).toBe('v2+');
  });

  it('modify gives up after MODIFY_ATTEMPTS lost tries with a REVISION_CONFLICT that says so', async () => {
    const store = await open();
    await store.put('hot', lease('h', 0));
    let tries = 0;
    const attempt = store.modify('hot', (cur) => {
      tries++;
      // Another writer lands between every read and write.
      void store.put('hot', lease('h', 1000 + tries));
      return { ...cur!.value, term: -1 };
    });
    await expect(attempt).rejects.toBeInstanceOf(RevisionConflictError);
    await expect(attempt).rejects.toThrow(/REVISION_CONFLICT: .*hot kept changing: 10 compare-and-set tries lost/);
    expect(tries).toBe(MODIFY_ATTEMPTS);
  });
});
