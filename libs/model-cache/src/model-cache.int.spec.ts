import { promises as fs } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { startRangeOrigin, type RangeOrigin } from '@gpufleet/testing';
import { makeArtifact } from './__fixtures__/artifact';
import { ModelCache, type CacheEvent, type DeliveryProgress } from './index';

const MiB = 1024 * 1024;
const fast = { chunkSize: MiB, stallTimeoutMs: 400, backoff: { initialMs: 20, maxMs: 100 }, progressThrottle: { intervalMs: 0, stepPercent: 0 } };

describe('ModelCache delivery', () => {
  const artifact = makeArtifact([
    { path: 'model-00001-of-00001.safetensors', size: 4 * MiB + 123 },
    { path: 'config.json', size: 700, alg: 'gitsha1' },
    { path: 'tokenizer/vocab.txt', size: 70_000, alg: 'gitsha1' },
    { path: 'empty.txt', size: 0, alg: 'gitsha1' },
  ]);
  let origin: RangeOrigin;
  let mirror: RangeOrigin;
  let root: string;
  const caches: ModelCache[] = [];
  const open = async (extra: Partial<Parameters<typeof ModelCache.open>[0]> = {}): Promise<ModelCache> => {
    const c = await ModelCache.open({ root, ...fast, ...extra });
    caches.push(c);
    return c;
  };

  beforeAll(async () => {
    origin = await startRangeOrigin({ files: artifact.contents, redirect: true });
    mirror = await startRangeOrigin({ files: artifact.contents });
  });
  afterAll(async () => {
    await origin.close();
    await mirror.close();
  });
  beforeEach(async () => {
    root = await fs.mkdtemp(join(tmpdir(), 'model-cache-'));
  });
  afterEach(async () => {
    while (caches.length) await caches.pop()?.close();
    await fs.rm(root, { recursive: true, force: true }).catch(async () => {
      await fs.chmod(root, 0o755);
    });
  });

  it('downloads every file in ranged chunks, verifies it and publishes a read-only tree', async () => {
    const cache = await open();
    const progress: DeliveryProgress[] = [];
    const before = origin.requests.length;
    const r = await cache.ensure(artifact.manifest([origin.url]), { onProgress: (p) => progress.push(p) });
    expect(r).toMatchObject({ state: 'Ready', originBytes: artifact.totalBytes, peerBytes: 0, reusedBytes: 0, bytesTotal: artifact.totalBytes });
    if (r.state !== 'Ready') throw new Error(r.message);
    for (const [path, bytes] of Object.entries(artifact.contents)) {
      expect((await fs.readFile(join(r.path, path))).equals(bytes)).toBe(true);
      expect((await fs.stat(join(r.path, path))).mode & 0o777).toBe(0o444);
    }
    expect((await fs.stat(r.path)).mode & 0o777).toBe(0o555);
    expect((await fs.stat(join(r.path, 'tokenizer'))).mode & 0o777).toBe(0o555);
    // the 4 MiB file went as ranged requests of 1 MiB (5 chunks), not one stream; on a loaded
    // machine a chunk may stall past the spec's 400 ms and be resumed by one more request, but
    // every byte still came once (originBytes above)
    const big = origin.requests.slice(before).filter((q) => q.path === 'model-00001-of-00001.safetensors');
    expect(big.length).toBeGreaterThanOrEqual(5);
    expect(big.every((q) => q.range?.startsWith('bytes='))).toBe(true);
    expect(progress[0].state).toBe('Downloading');
    expect(progress.at(-1)).toMatchObject({ state: 'Ready', percent: 100, bytesDone: artifact.totalBytes });
    expect(progress.filter((p) => p.state !== 'Downloading')).toHaveLength(1);
    expect(await fs.readdir(join(root, 'partial'))).toEqual([]);

    const again = await cache.ensure(artifact.manifest([origin.url]));
    expect(again).toMatchObject({ state: 'Ready', originBytes: 0, reusedBytes: artifact.totalBytes });
  });

  it('gives each blob a stream of its own before two streams share one', async () => {
    // one stream alone on a blob hands its bytes to the blob's hash in order; a second one writes
    // ahead of the hash, and those bytes must be read back to be hashed
    const shards = makeArtifact([0, 1, 2].map((i) => ({ path: `model-0000${i + 1}-of-00003.safetensors`, size: 4 * MiB })));
    const three = await startRangeOrigin({ files: shards.contents });
    try {
      const cache = await open({ streams: 3 });
      const r = await cache.ensure(shards.manifest([three.url]));
      expect(r).toMatchObject({ state: 'Ready', originBytes: shards.totalBytes });
      const firsts = three.requests.slice(0, 3).map((q) => q.path);
      expect(new Set(firsts).size).toBe(3);
    } finally {
      await three.close();
    }
  });

  it('rejects corrupt bytes, deletes them and fetches the file again from the other source', async () => {
    const events: CacheEvent[] = [];
    const cache = await open({ onEvent: (e) => events.push(e) });
    const path = 'model-00001-of-00001.safetensors';
    origin.corrupt(path, 1);
    const mirrorBefore = mirror.bytesServedOf(path);
    const r = await cache.ensure(artifact.manifest([origin.url, mirror.url]));
    expect(r.state).toBe('Ready');
    if (r.state !== 'Ready') return;
    expect((await fs.readFile(join(r.path, path))).equals(artifact.contents[path])).toBe(true);
    const mismatch = events.find((e) => e.type === 'DigestMismatch');
    expect(mismatch).toMatchObject({ type: 'DigestMismatch', path, action: 'Refetch' });
    // the second copy came from the source that did not contribute to the corrupt one
    expect(mirror.bytesServedOf(path) - mirrorBefore).toBe(artifact.contents[path].length);
  });

  it('fails with DigestMismatch and publishes nothing when every copy is corrupt', async () => {
    const cache = await open({ maxDigestAttempts: 2 });
    const path = 'model-00001-of-00001.safetensors';
    origin.corrupt(path, 10);
    const progress: DeliveryProgress[] = [];
    const m = artifact.manifest([origin.url]);
    const r = await cache.ensure(m, { onProgress: (p) => progress.push(p) });
    origin.corrupt(path, 0);
    expect(r).toMatchObject({ state: 'Failed', reason: 'DigestMismatch' });
    expect(progress.at(-1)).toMatchObject({ state: 'Failed', reason: 'DigestMismatch' });
    expect(await fs.readdir(join(root, 'trees'))).toEqual([]);
    const big = m.files.find((f) => f.path === path)!;
    await expect(fs.stat(join(root, 'blobs', 'sha256', big.digest.hex))).rejects.toThrow();
    expect(cache.trees()).toEqual([]);
  });

  it('retries a stalled range from the bytes already received', async () => {
    const cache = await open({ chunkSize: 8 * MiB });
    const path = 'model-00001-of-00001.safetensors';
    origin.stall(path, 2 * MiB);
    const before = origin.bytesServedOf(path);
    const t0 = Date.now();
    const r = await cache.ensure(artifact.manifest([origin.url]));
    expect(r.state).toBe('Ready');
    expect(Date.now() - t0).toBeLessThan(5_000);
    // the stalled response delivered 2 MiB; the retry asked only for the rest
    expect(origin.bytesServedOf(path) - before).toBe(artifact.contents[path].length);
  });

  it('ends Failed with SourceUnavailable, never Downloading, when the origin keeps failing', async () => {
    const events: CacheEvent[] = [];
    const cache = await open({ maxAttemptsWithoutProgress: 3, onEvent: (e) => events.push(e) });
    origin.fail('config.json', 503, 100);
    const progress: DeliveryProgress[] = [];
    const r = await cache.ensure(artifact.manifest([origin.url]), { onProgress: (p) => progress.push(p) });
    origin.fail('config.json', 503, 0);
    expect(r).toMatchObject({ state: 'Failed', reason: 'SourceUnavailable' });
    if (r.state === 'Failed') expect(r.message).toContain('HTTP 503');
    expect(progress.at(-1)?.state).toBe('Failed');
    const failures = events.filter((e) => e.type === 'SourceFailed');
    expect(failures.length).toBe(3);
    // backoff doubles per failure of the source (20, 40, ... ms, with jitter)
    expect(failures.map((e) => (e.type === 'SourceFailed' ? e.retryInMs : 0))[1]).toBeGreaterThanOrEqual(40);
  });

  it('refuses a bad manifest with the field it cannot accept', async () => {
    const cache = await open();
    const m = artifact.manifest([origin.url]);
    const bad = { ...m, files: [{ ...m.files[0], path: '../escape' }] };
    const r = await cache.ensure(bad);
    expect(r).toMatchObject({ state: 'Failed', reason: 'InvalidManifest' });
    if (r.state === 'Failed') expect(r.message).toMatch(/files\[0\]\.path/);
  });

  it('caps bandwidth over all streams', async () => {
    const small = makeArtifact([{ path: 'a.bin', size: 600 * 1024 }, { path: 'b.bin', size: 600 * 1024 }]);
    const o = await startRangeOrigin({ files: small.contents });
    try {
      const cache = await open({ bandwidthBytesPerSecond: 1 * MiB, chunkSize: 256 * 1024 });
      const t0 = Date.now();
      const r = await cache.ensure(small.manifest([o.url]));
      expect(r.state).toBe('Ready');
      // 1.2 MiB at 1 MiB/s with a 1 MiB burst: at least ~0.15 s, far more than loopback needs
      expect(Date.now() - t0).toBeGreaterThanOrEqual(150);
    } finally {
      await o.close();
    }
  });

  it('fetches a blob two concurrent deliveries share once', async () => {
    const cache = await open();
    const path = 'model-00001-of-00001.safetensors';
    const full = artifact.manifest([origin.url]);
    const weightsOnly = { digest: `sha256:${'f'.repeat(64)}`, files: full.files.filter((f) => f.path === path) };
    const before = origin.bytesServedOf(path);
    const [x, y] = await Promise.all([cache.ensure(full), cache.ensure(weightsOnly)]);
    expect([x.state, y.state]).toEqual(['Ready', 'Ready']);
    expect(origin.bytesServedOf(path) - before).toBe(artifact.contents[path].length);
    expect((await cache.usage()).blobBytes).toBe(artifact.totalBytes);
  });

  it('ends Failed with Aborted when the caller cancels, and keeps the partial file for the next try', async () => {
    const slow = makeArtifact([{ path: 'slow.bin', size: 2 * MiB }]);
    const o = await startRangeOrigin({ files: slow.contents, bytesPerSecond: MiB });
    const m = slow.manifest([o.url]);
    const checkpoint = join(root, 'partial', `sha256-${m.files[0].digest.hex}.checkpoint.json`);
    const stop = new AbortController();
    // cancel once the first chunk is checkpointed
    const watcher = setInterval(() => void fs.stat(checkpoint).then(() => stop.abort(), () => undefined), 10);
    try {
      const cache = await open({ chunkSize: 128 * 1024, streams: 2 });
      const progress: DeliveryProgress[] = [];
      const r = await cache.ensure(m, { signal: stop.signal, onProgress: (p) => progress.push(p) });
      expect(r).toMatchObject({ state: 'Failed', reason: 'Aborted' });
      expect(progress.at(-1)?.state).toBe('Failed');
      expect(await fs.readdir(join(root, 'trees'))).toEqual([]);
      expect((await fs.readdir(join(root, 'partial'))).length).toBeGreaterThan(0);
      o.setBytesPerSecond(undefined);
      const again = await cache.ensure(slow.manifest([o.url]));
      expect(again.state).toBe('Ready');
      expect(again.resumedBytes).toBeGreaterThan(0);
      expect(again.originBytes + again.resumedBytes).toBe(2 * MiB);
    } finally {
      clearInterval(watcher);
      await o.close();
    }
  });

  it('cleans up what a crash left between the steps and rebuilds the tree from the blobs it kept', async () => {
    const m = artifact.manifest([origin.url]);
    const first = await open();
    expect((await first.ensure(m)).state).toBe('Ready');
    await first.close();
    caches.length = 0;
    // a crash after the blobs were published but before the record was durable, with staging left in tmp/
    const hex = m.digest.slice('sha256:'.length);
    await fs.writeFile(join(root, 'state', `${hex}.json`), '{"torn');
    await fs.mkdir(join(root, 'tmp', 'tree-leftover', 'sub'), { recursive: true });
    const reopened = await open();
    expect(reopened.trees()).toEqual([]);
    expect(await fs.readdir(join(root, 'trees'))).toEqual([]);
    expect(await fs.readdir(join(root, 'tmp'))).toEqual([]);
    const r = await reopened.ensure(m);
    expect(r).toMatchObject({ state: 'Ready', originBytes: 0, reusedBytes: artifact.totalBytes });
  });
});
