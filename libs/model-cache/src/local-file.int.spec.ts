import { createHash, randomBytes } from 'crypto';
import { promises as fs } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { pathToFileURL } from 'url';
import { createBlobHasher } from './hashing';
import { ModelCache, type CacheManifest } from './index';

/** A LOCAL artifact's manifest over the files of `dir`, as the resolver makes it (sha256 per file, a file:// URL each). */
function localManifest(dir: string, files: Record<string, Buffer>): CacheManifest {
  const entries = Object.entries(files).map(([path, bytes]) => ({
    path,
    size: bytes.length,
    digest: { alg: 'sha256' as const, hex: createBlobHasher('sha256', bytes.length).update(bytes).digest('hex') },
    sources: [{ url: pathToFileURL(join(dir, path)).href }],
  }));
  const text = entries.map((e) => `sha256:${e.digest.hex} ${e.size} ${e.path}\n`).sort().join('');
  return { digest: `sha256:${createHash('sha256').update(text).digest('hex')}`, files: entries };
}

describe('LOCAL sources: files copied from the same path on the node', () => {
  let shared: string;
  let root: string;
  const files = { 'config.json': Buffer.from('{"num_hidden_layers":2}'), 'weights/model.safetensors': randomBytes(3 * 256 * 1024 + 5) };

  beforeAll(async () => {
    shared = await fs.mkdtemp(join(tmpdir(), 'model-cache-shared-'));
    root = await fs.mkdtemp(join(tmpdir(), 'model-cache-local-'));
    await fs.mkdir(join(shared, 'm', 'weights'), { recursive: true });
    for (const [path, bytes] of Object.entries(files)) await fs.writeFile(join(shared, 'm', path), bytes);
  });
  afterAll(async () => {
    await fs.rm(shared, { recursive: true, force: true });
    await fs.rm(root, { recursive: true, force: true });
  });

  it('copies and verifies the files into a tree, and fails with a reason when a file is missing or differs', async () => {
    const cache = await ModelCache.open({ root, capacityBytes: 64 * 1024 * 1024, chunkSize: 256 * 1024, localRoots: [shared], maxDigestAttempts: 2 });
    const manifest = localManifest(join(shared, 'm'), files);
    const ready = await cache.ensure(manifest);
    expect(ready).toMatchObject({ state: 'Ready', bytesTotal: files['config.json'].length + files['weights/model.safetensors'].length });
    if (ready.state !== 'Ready') throw new Error(ready.message);
    expect(await fs.readFile(join(ready.path, 'weights/model.safetensors'))).toEqual(files['weights/model.safetensors']);

    // missing on this node: fails at once, saying where it looked
    const missing = localManifest(join(shared, 'gone'), { 'config.json': Buffer.from('{"num_hidden_layers":4}') });
    expect(await cache.ensure(missing)).toMatchObject({
      state: 'Failed',
      reason: 'SourceUnavailable',
      message: expect.stringMatching(new RegExp(`local file ${join(shared, 'gone')}/\\S+ cannot be read on this node \\(ENOENT\\)`)),
    });

    // same size, other bytes: the hash taken while copying does not match, nothing is published
    const changed = { ...files, 'config.json': Buffer.from('{"num_hidden_layers":3}') };
    await fs.mkdir(join(shared, 'm2'));
    await fs.writeFile(join(shared, 'm2', 'config.json'), '{"num_hidden_layers":9}');
    const differs = await cache.ensure(localManifest(join(shared, 'm2'), { 'config.json': changed['config.json'] }));
    expect(differs).toMatchObject({ state: 'Failed', reason: 'DigestMismatch' });
    // another size: said before a byte is copied
    await fs.writeFile(join(shared, 'm2', 'config.json'), '{}');
    expect(await cache.ensure(localManifest(join(shared, 'm2'), { 'config.json': changed['config.json'] }))).toMatchObject({
      state: 'Failed',
      reason: 'DigestMismatch',
      message: expect.stringContaining(`local file ${join(shared, 'm2', 'config.json')} is 2 bytes on this node, the manifest says 23`),
    });
    expect(cache.trees().map((t) => t.digest)).toEqual([manifest.digest]);

    // a path outside the cache's localRoots is refused before anything is read
    const outside = localManifest(root, { 'x.json': Buffer.from('{}') });
    expect(await cache.ensure(outside)).toMatchObject({ state: 'Failed', reason: 'InvalidManifest', message: expect.stringContaining(`below one of the cache's localRoots (${shared})`) });
    await cache.close();
  });
});
