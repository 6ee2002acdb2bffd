// Node caches that start at the same moment share one origin download: each blob is claimed by
// one node, the others take it from that node once it is verified (LocalSwarm: the directory of
// caches in one process; the node role keeps the same facts in artifact-nodes records).
import { promises as fs } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { startRangeOrigin, waitFor, type RangeOrigin } from '@gpufleet/testing';
import { makeArtifact } from './__fixtures__/artifact';
import { LocalSwarm, ModelCache, servePeerBlobs, type DeliveryResult, type ModelCacheOptions, type PeerServer } from './index';

const MiB = 1024 * 1024;
const TOKEN = 'swarm-token-0123456789abcdef';

describe('a swarm of node caches started together', () => {
  let dir: string;
  const closing: Array<() => Promise<void>> = [];

  beforeEach(async () => {
    dir = await fs.mkdtemp(join(tmpdir(), 'model-cache-swarm-'));
  });
  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  /** A node: its cache, its peer server, its membership of `swarm`. */
  async function node(swarm: LocalSwarm, name: string, options: Partial<ModelCacheOptions> = {}): Promise<{ cache: ModelCache; server: PeerServer }> {
    // the peer server needs the cache and the directory needs the server's URL: the cache is opened behind a forwarder
    const opening: { cache?: ModelCache } = {};
    const server = await servePeerBlobs({ cache: { verifiedBlob: (d) => opening.cache?.verifiedBlob(d) }, token: TOKEN });
    const cache = (opening.cache = await ModelCache.open({
      root: join(dir, name),
      chunkSize: 512 * 1024,
      streams: 4,
      stallTimeoutMs: 2_000,
      backoff: { initialMs: 20, maxMs: 100 },
      peers: swarm.join(name, { url: server.url, token: TOKEN }),
      ...options,
    }));
    closing.push(async () => {
      await server.close();
      await cache.close();
    });
    return { cache, server };
  }

  async function origin(files: Record<string, Buffer>, bytesPerSecond?: number): Promise<RangeOrigin> {
    const o = await startRangeOrigin({ files, bytesPerSecond });
    closing.push(() => o.close());
    return o;
  }

  it('fetches a 4-file artifact into 6 nodes at once with the origin sending it about once', async () => {
    const artifact = makeArtifact([
      ...[1, 2, 3, 4].map((i) => ({ path: `model-0000${i}-of-00004.safetensors`, size: 2 * MiB })),
      { path: 'config.json', size: 700, alg: 'gitsha1' as const },
    ]);
    // slow enough per response that every node starts while the first claims are still running
    const hub = await origin(artifact.contents, 8 * MiB);
    const swarm = new LocalSwarm();
    const nodes = await Promise.all(['n1', 'n2', 'n3', 'n4', 'n5', 'n6'].map((n) => node(swarm, n)));
    const manifest = artifact.manifest([hub.url]);
    const results: DeliveryResult[] = await Promise.all(nodes.map((n) => n.cache.ensure(manifest)));
    for (const r of results) expect(r.state).toBe('Ready');
    // the small config.json is never waited for: each node may fetch it itself
    expect(hub.bytesServed).toBeLessThanOrEqual(1.2 * artifact.totalBytes);
    expect(hub.bytesServed).toBe(results.reduce((n, r) => n + r.originBytes, 0));
    expect(results.reduce((n, r) => n + r.peerBytes, 0)).toBeGreaterThanOrEqual(4 * artifact.totalBytes);
    for (const r of results) {
      if (r.state !== 'Ready') continue;
      for (const [path, bytes] of Object.entries(artifact.contents)) expect((await fs.readFile(join(r.path, path))).equals(bytes)).toBe(true);
    }
  });

  it('waits for a peer fetching the blob only until it stalls past the stall timeout, then goes to the origin', async () => {
    const path = 'model.safetensors';
    const artifact = makeArtifact([{ path, size: 2 * MiB }]);
    const hub = await origin(artifact.contents);
    const swarm = new LocalSwarm();
    // the claimer's own stall timeout is long: it holds its claim, its bytes no longer moving
    const claimer = await node(swarm, 'claimer', { stallTimeoutMs: 60_000, streams: 1, chunkSize: 4 * MiB });
    const waiter = await node(swarm, 'waiter', { stallTimeoutMs: 800 });
    hub.stall(path, 256 * 1024);
    const manifest = artifact.manifest([hub.url]);
    const abort = new AbortController();
    const stuck = claimer.cache.ensure(manifest, { signal: abort.signal });
    await waitFor('the claimer stalled mid-blob', async () => hub.bytesServedOf(path) >= 256 * 1024 || undefined, { timeoutMs: 10_000, intervalMs: 10 });
    const t = Date.now();
    const r = await waiter.cache.ensure(manifest);
    const waited = Date.now() - t;
    expect(r).toMatchObject({ state: 'Ready', originBytes: 2 * MiB, peerBytes: 0 });
    // it gave the claimer its stall timeout (from when it first saw the claim), not more than a few polls beyond
    expect(waited).toBeGreaterThanOrEqual(700);
    expect(waited).toBeLessThan(10_000);
    abort.abort();
    expect(await stuck).toMatchObject({ state: 'Failed', reason: 'Aborted' });
  });
});
