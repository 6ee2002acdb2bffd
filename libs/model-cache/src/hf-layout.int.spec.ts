import { execFile } from 'child_process';
import { createHash } from 'crypto';
import { promises as fs } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { promisify } from 'util';
import { startRangeOrigin, type RangeOrigin } from '@gpufleet/testing';
import { makeArtifact } from './__fixtures__/artifact';
import { ModelCache } from './index';

const run = promisify(execFile);
const READER = join(__dirname, '__fixtures__', 'hf-offline-reader.js');
const COMMIT = 'a'.repeat(8) + '0123456789abcdef0123456789abcdef';

describe('the Hugging Face cache layout', () => {
  const artifact = makeArtifact([
    { path: 'model.safetensors', size: 2 * 1024 * 1024 },
    { path: 'config.json', size: 512, alg: 'gitsha1' },
    { path: 'tokenizer/tokenizer.json', size: 4096, alg: 'gitsha1' },
  ]);
  let origin: RangeOrigin;
  let root: string;

  beforeAll(async () => {
    origin = await startRangeOrigin({ files: artifact.contents });
    root = await fs.mkdtemp(join(tmpdir(), 'model-cache-hf-'));
  });
  afterAll(async () => {
    await origin.close();
    await fs.rm(root, { recursive: true, force: true });
  });

  it('is read unchanged by a separate process given HF_HUB_OFFLINE=1', async () => {
    const cache = await ModelCache.open({ root, chunkSize: 512 * 1024 });
    const r = await cache.ensure(artifact.manifest([origin.url]), { hf: { repo: 'acme/tiny-llm', commit: COMMIT, revision: 'main' } });
    expect(r.state).toBe('Ready');
    if (r.state !== 'Ready') return;
    const repoDir = join(root, 'hf', 'models--acme--tiny-llm');
    expect(r.hfSnapshotPath).toBe(join(repoDir, 'snapshots', COMMIT));
    // relative links into the repository's blobs, as huggingface_hub makes them
    expect(await fs.readlink(join(repoDir, 'snapshots', COMMIT, 'tokenizer', 'tokenizer.json'))).toMatch(/^\.\.\/\.\.\/\.\.\/blobs\/[0-9a-f]{40}$/);
    expect(await fs.readFile(join(repoDir, 'refs', 'main'), 'utf8')).toBe(COMMIT);
    await cache.close();

    const { stdout } = await run(process.execPath, [READER, 'acme/tiny-llm', 'main', 'model.safetensors', 'config.json', 'tokenizer/tokenizer.json'], {
      env: { PATH: process.env.PATH ?? '', HF_HUB_CACHE: join(root, 'hf'), HF_HUB_OFFLINE: '1' },
      cwd: join(__dirname, '..', '..', '..'),
    });
    const seen = JSON.parse(stdout) as {
      commit: string;
      repos: Array<{ id: { name: string; type: string }; revisions: Array<{ commitOid: string; refs: string[]; files: number }> }>;
      warnings: string[];
      files: Record<string, { pointer: string; sha256: string }>;
    };
    expect(seen.warnings).toEqual([]);
    expect(seen.commit).toBe(COMMIT);
    // scanCacheDir lists top-level files of a snapshot only
    expect(seen.repos).toEqual([{ id: { name: 'acme/tiny-llm', type: 'model' }, revisions: [{ commitOid: COMMIT, refs: ['main'], files: 2 }] }]);
    for (const [p, bytes] of Object.entries(artifact.contents)) {
      expect(seen.files[p].pointer).toBe(join(repoDir, 'snapshots', COMMIT, p));
      expect(seen.files[p].sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    }
  });
});

describe('evicting a tree with a Hugging Face view', () => {
  it('takes its snapshot, ref and blobs out of the HF cache', async () => {
    const artifact = makeArtifact([{ path: 'model.safetensors', size: 256 * 1024 }]);
    const origin = await startRangeOrigin({ files: artifact.contents });
    const root = await fs.mkdtemp(join(tmpdir(), 'model-cache-hf-evict-'));
    try {
      const cache = await ModelCache.open({ root });
      const r = await cache.ensure(artifact.manifest([origin.url]), { hf: { repo: 'acme/gone', commit: COMMIT, revision: 'main' } });
      expect(r.state).toBe('Ready');
      await cache.close();
      // reopened with room for less than the tree: the next watermark pass evicts it
      const small = await ModelCache.open({ root, capacityBytes: 128 * 1024 });
      expect(await small.enforceWatermarks()).toEqual([r.digest]);
      expect(await fs.readdir(join(root, 'hf'))).toEqual([]);
      expect(await fs.readdir(join(root, 'trees'))).toEqual([]);
      expect((await small.usage()).blobBytes).toBe(0);
      await small.close();
    } finally {
      await origin.close();
      await fs.rm(root, { recursive: true, force: true });
    }
  });
});
