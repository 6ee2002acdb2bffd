import { promises as fs } from 'fs';
import { tmpdir } from 'os';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'net';
import { join } from 'path';
import { startRangeOrigin, type RangeOrigin } from '@gpufleet/testing';
import { makeArtifact } from './__fixtures__/artifact';
import { ModelCache, servePeerBlobs, staticPeers, type PeerServer } from './index';

const MiB = 1024 * 1024;
const TOKEN = 'peer-token-0123456789abcdef';

describe('peer sync', () => {
  const path = 'model.safetensors';
  const artifact = makeArtifact([
    { path, size: 4 * MiB },
    { path: 'config.json', size: 900, alg: 'gitsha1' },
  ]);
  let origin: RangeOrigin;
  let dir: string;
  let seed: ModelCache;
  let peer: PeerServer;
  const opened: ModelCache[] = [];
  const node = async (name: string, extra: Partial<Parameters<typeof ModelCache.open>[0]> = {}): Promise<ModelCache> => {
    const c = await ModelCache.open({ root: join(dir, name), chunkSize: MiB, stallTimeoutMs: 1_000, backoff: { initialMs: 20, maxMs: 100 }, ...extra });
    opened.push(c);
    return c;
  };

  beforeAll(async () => {
    origin = await startRangeOrigin({ files: artifact.contents });
    dir = await fs.mkdtemp(join(tmpdir(), 'model-cache-peer-'));
    seed = await node('node-1');
    expect(await seed.ensure(artifact.manifest([origin.url]))).toMatchObject({ state: 'Ready', originBytes: artifact.totalBytes });
    peer = await servePeerBlobs({ cache: seed, token: TOKEN });
  });
  afterAll(async () => {
    await peer.close();
    for (const c of opened) await c.close();
    await origin.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('serves a second node from the first one: the origin sends the artifact once for both', async () => {
    const before = origin.bytesServed;
    const second = await node('node-2', { peers: staticPeers([{ url: peer.url, token: TOKEN }]) });
    const r = await second.ensure(artifact.manifest([origin.url]));
    expect(r).toMatchObject({ state: 'Ready', originBytes: 0, peerBytes: artifact.totalBytes });
    expect(origin.bytesServed - before).toBe(0);
    if (r.state === 'Ready') expect((await fs.readFile(join(r.path, path))).equals(artifact.contents[path])).toBe(true);
  });

  it('refuses a peer without the token, and the node falls back to the origin', async () => {
    const res = await fetch(`${peer.url}/blobs/${artifact.manifest([]).files[0].digest.alg}/${artifact.manifest([]).files[0].digest.hex}`, { headers: { authorization: 'Bearer wrong-token-wrong-token' } });
    expect(res.status).toBe(401);
    const third = await node('node-3', { peers: staticPeers([{ url: peer.url, token: 'wrong-token-wrong-token' }]) });
    const r = await third.ensure(artifact.manifest([origin.url]));
    expect(r).toMatchObject({ state: 'Ready', peerBytes: 0, originBytes: artifact.totalBytes });
  });

  it('serves ranges and says 404 for a blob it does not hold', async () => {
    const f = artifact.manifest([]).files[0];
    const ranged = await fetch(`${peer.url}/blobs/sha256/${f.digest.hex}`, { headers: { authorization: `Bearer ${TOKEN}`, range: 'bytes=10-19' } });
    expect(ranged.status).toBe(206);
    expect(ranged.headers.get('content-range')).toBe(`bytes 10-19/${f.size}`);
    expect(Buffer.from(await ranged.arrayBuffer()).equals(artifact.contents[path].subarray(10, 20))).toBe(true);
    const missing = await fetch(`${peer.url}/blobs/sha256/${'0'.repeat(64)}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(missing.status).toBe(404);
  });

  it('continues from the bytes already received when the peer dies mid-file', async () => {
    // the peer as seen through a link that dies for good after 1 MiB of its answer
    const dying = await dyingLink(peer.port, MiB);
    const fourth = await node('node-4', { chunkSize: 8 * MiB, peers: staticPeers([{ url: `http://127.0.0.1:${dying.port}`, token: TOKEN }]) });
    try {
      const r = await fourth.ensure(artifact.manifest([origin.url]));
      expect(r.state).toBe('Ready');
      if (r.state !== 'Ready') return;
      expect(dying.died).toBe(true);
      expect(r.peerBytes).toBeGreaterThan(0);
      expect(r.peerBytes).toBeLessThanOrEqual(MiB);
      // nothing fetched twice: the origin is asked only for what the peer did not deliver
      expect(r.originBytes).toBe(artifact.totalBytes - r.peerBytes);
      expect((await fs.readFile(join(r.path, path))).equals(artifact.contents[path])).toBe(true);
    } finally {
      dying.server.close();
    }
  });
});

/** A TCP relay to `port` that cuts every connection, and stops listening, once `limit` bytes of response went through. */
async function dyingLink(port: number, limit: number): Promise<{ port: number; server: Server; readonly died: boolean }> {
  let relayed = 0;
  let died = false;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    sockets.add(client).add(upstream);
    client.pipe(upstream);
    upstream.on('data', (d: Buffer) => {
      if (died) return;
      const room = limit - relayed;
      client.write(room >= d.length ? d : d.subarray(0, room));
      relayed += Math.min(room, d.length);
      if (relayed >= limit) {
        died = true;
        server.close();
        for (const s of sockets) s.destroy();
      }
    });
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    server,
    get died() {
      return died;
    },
  };
}
