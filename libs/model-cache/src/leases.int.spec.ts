import { promises as fs } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { startRangeOrigin, type RangeOrigin } from '@gpufleet/testing';
import { makeArtifact } from './__fixtures__/artifact';
import { LEASES_FILE, ModelCache, readPersistedLeases, type CacheEvent } from './index';

/** The unit of sizes here: small, so the spec spends its time on the leases, not on hashing and syncing. */
const U = 256 * 1024;

describe('leases persisted in the cache root', () => {
  const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((n) => makeArtifact([{ path: `${n}.bin`, size: 3 * U }]));
  let origin: RangeOrigin;
  let root: string;

  beforeAll(async () => {
    origin = await startRangeOrigin({ files: { ...a.contents, ...b.contents, ...c.contents, ...d.contents } });
    root = await fs.mkdtemp(join(tmpdir(), 'model-cache-leases-'));
  });
  afterAll(async () => {
    await origin.close();
    await fs.rm(root, { recursive: true, force: true });
  });

  it('a lease survives a close and reopen of the cache, and a full-disk eviction after the reopen does not take the leased tree', async () => {
    const [ma, mb, mc, md] = [a, b, c, d].map((x) => x.manifest([origin.url]));
    // capacity 10 U: high watermark 8 U, low 7 U; each tree is 3 U
    const first = await ModelCache.open({ root, capacityBytes: 10 * U, chunkSize: U });
    expect(await first.ensure(ma)).toMatchObject({ state: 'Ready' });
    const lease = await first.acquire(ma.digest, { holder: 'team-a.chat' });
    // b is used after a: a is the least recently used tree, the first eviction would take it
    expect(await first.ensure(mb)).toMatchObject({ state: 'Ready' });
    expect(await readPersistedLeases(root)).toEqual([{ id: lease.id, digest: ma.digest, holder: 'team-a.chat', acquiredAt: expect.any(Number) }]);
    await first.close();

    const events: CacheEvent[] = [];
    const reopened = await ModelCache.open({ root, capacityBytes: 10 * U, chunkSize: U, onEvent: (e) => events.push(e) });
    const [restored] = reopened.heldLeases();
    expect(restored).toMatchObject({ id: lease.id, digest: ma.digest, holder: 'team-a.chat', path: join(root, 'trees', ma.digest.slice('sha256:'.length)) });
    expect(reopened.trees().find((t) => t.digest === ma.digest)?.inUse).toBe(1);

    // c and then d need 3 U each above 6 used: each time the least recently used tree that no
    // lease holds goes (b, then c), never a
    expect(await reopened.ensure(mc)).toMatchObject({ state: 'Ready' });
    expect(await reopened.ensure(md)).toMatchObject({ state: 'Ready' });
    expect(events.filter((e) => e.type === 'TreeEvicted').map((e) => (e as { digest: string }).digest)).toEqual([mb.digest, mc.digest]);
    expect(reopened.trees().map((t) => t.digest).sort()).toEqual([ma.digest, md.digest].sort());
    expect(await fs.readFile(join(restored.path, 'a.bin'))).toEqual(a.contents['a.bin']);

    // released through the restored handle (twice: idempotent), the tree is evictable again
    await restored.release();
    await restored.release();
    await lease.release(); // the first process's handle of the same lease: already released, counts nothing
    expect(await readPersistedLeases(root)).toEqual([]);
    expect(reopened.trees().find((t) => t.digest === ma.digest)?.inUse).toBe(0);
    // (the release counts as a use: d is now the least recently used and goes first, then a)
    expect(await reopened.ensure(mb)).toMatchObject({ state: 'Ready' });
    expect(await reopened.ensure(mc)).toMatchObject({ state: 'Ready' });
    expect(events.filter((e) => e.type === 'TreeEvicted').map((e) => (e as { digest: string }).digest).slice(2)).toEqual([md.digest, ma.digest]);
    await reopened.close();
  });

  it('drops a lease whose tree is gone at open, and refuses a leases file it did not write, naming the field', async () => {
    const gone = `sha256:${'0'.repeat(64)}`;
    await fs.writeFile(join(root, LEASES_FILE), JSON.stringify({ version: 1, leases: [{ id: 'x1', digest: gone, holder: 'old', acquiredAt: 1 }] }));
    const cache = await ModelCache.open({ root, capacityBytes: 10 * U });
    expect(cache.heldLeases()).toEqual([]);
    expect(await readPersistedLeases(root)).toEqual([]);
    await cache.close();

    await fs.writeFile(join(root, LEASES_FILE), JSON.stringify({ version: 1, leases: [{ id: 'x1', digest: 'sha256:nothex', holder: '', acquiredAt: 1 }] }));
    await expect(ModelCache.open({ root, capacityBytes: 10 * U })).rejects.toThrow(`INVALID_LEASES: ${join(root, LEASES_FILE)}: leases[0].digest: expected sha256:<64 hex>, got "sha256:nothex"`);
    await fs.rm(join(root, LEASES_FILE));
  });
});
