import { promises as fs } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { startRangeOrigin, type RangeOrigin } from '@gpufleet/testing';
import { makeArtifact, type TestArtifact } from './__fixtures__/artifact';
import { createBlobHasher } from './hashing';
import { ModelCache, type CacheEvent } from './index';

const MiB = 1024 * 1024;

describe('a full disk', () => {
  const a = makeArtifact([{ path: 'a.bin', size: 3 * MiB }]);
  const b = makeArtifact([{ path: 'b.bin', size: 3 * MiB }]);
  const c = makeArtifact([{ path: 'c.bin', size: 3 * MiB }]);
  const d = makeArtifact([{ path: 'd.bin', size: 3 * MiB }]);
  let origin: RangeOrigin;
  let root: string;
  let e: TestArtifact;

  beforeAll(async () => {
    // e shares c's weights and adds a file: the shared blob is stored, and counted, once
    e = {
      contents: { 'extra.json': Buffer.from('{"a":1}') },
      totalBytes: 0,
      manifest: (origins) => {
        const cm = c.manifest(origins);
        const extra = makeArtifactFile('extra.json', Buffer.from('{"a":1}'), origins[0] as string);
        return { digest: `sha256:${'e'.repeat(64)}`, files: [...cm.files, extra] };
      },
    };
    origin = await startRangeOrigin({ files: { ...a.contents, ...b.contents, ...c.contents, ...d.contents, ...e.contents } });
    root = await fs.mkdtemp(join(tmpdir(), 'model-cache-full-'));
  });
  afterAll(async () => {
    await origin.close();
    await fs.rm(root, { recursive: true, force: true });
  });

  it('evicts unused trees down to the low watermark and never a pinned or in-use one', async () => {
    const events: CacheEvent[] = [];
    // 10 MiB: high watermark 8 MiB, low 7 MiB
    const cache = await ModelCache.open({ root, capacityBytes: 10 * MiB, chunkSize: MiB, onEvent: (ev) => events.push(ev) });
    const ma = a.manifest([origin.url]);
    const mb = b.manifest([origin.url]);
    const mc = c.manifest([origin.url]);
    expect(await cache.ensure(ma, { pin: true })).toMatchObject({ state: 'Ready' });
    expect(await cache.ensure(mb)).toMatchObject({ state: 'Ready' });
    const lease = await cache.acquire(mb.digest);

    // a pinned and an in-use tree hold 6 MiB; 3 more would pass the high watermark
    const served = origin.bytesServedOf('c.bin');
    const refused = await cache.ensure(mc);
    expect(refused).toMatchObject({ state: 'Failed', reason: 'InsufficientCapacity' });
    if (refused.state === 'Failed') expect(refused.message).toMatch(/needs 3145728 bytes/);
    expect(origin.bytesServedOf('c.bin')).toBe(served);
    expect((await fs.readdir(join(root, 'trees'))).length).toBe(2);
    expect(cache.trees().map((t) => t.digest).sort()).toEqual([ma.digest, mb.digest].sort());

    await lease.release();
    expect(await cache.ensure(mc)).toMatchObject({ state: 'Ready' });
    expect(cache.trees().map((t) => t.digest).sort()).toEqual([ma.digest, mc.digest].sort());
    expect(events).toContainEqual(expect.objectContaining({ type: 'TreeEvicted', digest: mb.digest }));

    const me = e.manifest([origin.url]);
    expect(await cache.ensure(me)).toMatchObject({ state: 'Ready', reusedBytes: 3 * MiB });
    expect((await cache.usage()).blobBytes).toBe(6 * MiB + 7);

    // d needs 3 MiB: c goes first (least recently used) but frees nothing, e shares its blob; then e
    const ready = await cache.ensure(d.manifest([origin.url]));
    expect(ready).toMatchObject({ state: 'Ready' });
    expect(cache.trees().map((t) => t.digest).sort()).toEqual([ma.digest, d.manifest([origin.url]).digest].sort());
    const usage = await cache.usage();
    expect(usage.blobBytes).toBe(6 * MiB);
    expect(usage.usedBytes).toBeLessThanOrEqual(usage.lowBytes);
    await cache.close();

    // after a restart the pin and the trees are still there
    const reopened = await ModelCache.open({ root, capacityBytes: 10 * MiB });
    expect(reopened.trees().find((t) => t.digest === ma.digest)?.pinned).toBe(true);
    expect((await reopened.usage()).blobBytes).toBe(6 * MiB);
    await reopened.close();
  });

  it('measures the filesystem when no capacity is configured', async () => {
    const cache = await ModelCache.open({ root });
    const st = await fs.statfs(root);
    const u = await cache.usage();
    expect(u.capacityBytes).toBe(st.blocks * st.bsize);
    expect(u.highBytes).toBeCloseTo(0.8 * u.capacityBytes);
    await cache.close();
  });
});

function makeArtifactFile(path: string, bytes: Buffer, originUrl: string) {
  const hex = createBlobHasher('gitsha1', bytes.length).update(bytes).digest('hex');
  return { path, size: bytes.length, digest: { alg: 'gitsha1' as const, hex }, sources: [{ url: `${originUrl}/${path}` }] };
}
