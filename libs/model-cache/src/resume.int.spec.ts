import { spawn } from 'child_process';
import { promises as fs } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { startRangeOrigin, waitFor } from '@gpufleet/testing';
import { makeArtifact } from './__fixtures__/artifact';
import { ModelCache, type CacheEvent } from './index';

const MiB = 1024 * 1024;
const CHILD = join(__dirname, '__fixtures__', 'deliver-child.ts');

describe('a delivery killed mid-file', () => {
  it('resumes from its checkpoint without fetching the completed chunks again', async () => {
    const path = 'model.safetensors';
    const size = 8 * MiB;
    const chunkSize = 512 * 1024;
    const artifact = makeArtifact([{ path, size }]);
    // slow enough that the child is still downloading when it is killed
    const origin = await startRangeOrigin({ files: artifact.contents, bytesPerSecond: 2 * MiB });
    const root = await fs.mkdtemp(join(tmpdir(), 'model-cache-resume-'));
    try {
      const manifest = artifact.manifest([origin.url]);
      const options = { chunkSize, streams: 4, stallTimeoutMs: 2_000, backoff: { initialMs: 20, maxMs: 100 } };
      await fs.writeFile(join(root, 'manifest.json'), JSON.stringify(manifest));
      await fs.writeFile(join(root, 'options.json'), JSON.stringify(options));
      const cacheRoot = join(root, 'cache');
      const child = spawn(process.execPath, ['-r', '@swc-node/register', CHILD, cacheRoot, join(root, 'manifest.json'), join(root, 'options.json')], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<NodeJS.Signals | null>((r) => child.once('exit', (_code, signal) => r(signal)));
      const checkpoint = join(cacheRoot, 'partial', `sha256-${manifest.files[0].digest.hex}.checkpoint.json`);
      const done = async (): Promise<number[]> => {
        try {
          return (JSON.parse(await fs.readFile(checkpoint, 'utf8')) as { done: number[] }).done;
        } catch {
          return [];
        }
      };
      await waitFor('4 chunks in the checkpoint', async () => {
        if (child.exitCode !== null) throw new Error(`child exited early: ${stderr}`);
        return (await done()).length >= 4 || undefined;
      });
      child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');
      const firstRun = origin.bytesServed;
      const completed = await done();
      expect(completed.length).toBeGreaterThanOrEqual(4);
      expect(firstRun).toBeLessThan(size);

      origin.setBytesPerSecond(undefined);
      const events: CacheEvent[] = [];
      const cache = await ModelCache.open({ root: cacheRoot, ...options, onEvent: (e) => events.push(e) });
      const r = await cache.ensure(manifest);
      await cache.close();
      expect(r.state).toBe('Ready');
      if (r.state !== 'Ready') return;
      expect((await fs.readFile(join(r.path, path))).equals(artifact.contents[path])).toBe(true);
      const resumed = completed.length * chunkSize;
      expect(r.resumedBytes).toBeGreaterThanOrEqual(resumed);
      expect(events.find((e) => e.type === 'Resumed')).toMatchObject({ path, bytes: r.resumedBytes });
      // the second run fetched at most what the checkpoint did not hold
      expect(r.originBytes).toBeLessThanOrEqual(size - resumed);
      expect(r.originBytes + r.resumedBytes).toBe(size);
      expect(origin.bytesServed - firstRun).toBe(r.originBytes);
    } finally {
      await origin.close();
      await fs.rm(root, { recursive: true, force: true });
    }
  });
});
