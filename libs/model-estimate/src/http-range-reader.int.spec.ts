import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startHubSimulator, waitFor, writeSparseCheckpoint, type HubSimulator, type SparseCheckpoint } from '@gpufleet/testing';
import { describeArtifact } from './artifact';
import { HttpRangeReader, RangeReadError, type RemoteArtifactFile } from './http-range-reader';

const REPO = 'acme/llama-8b';
const TOKEN = 'hf_reader';

describe('HttpRangeReader against the hub simulator', () => {
  let hub: HubSimulator;
  let checkpoint: SparseCheckpoint;
  let files: RemoteArtifactFile[];

  beforeAll(async () => {
    checkpoint = writeSparseCheckpoint('llama-3.1-8b', { dtype: 'BF16', shards: 4, totalSize: 16_060_522_496 });
    hub = await startHubSimulator({
      hashCacheDir: null,
      tokens: { [TOKEN]: { canRead: [REPO] } },
      repos: [
        {
          id: REPO,
          private: true,
          commits: [
            {
              files: checkpoint.files.map((path) => ({
                path,
                // Declared oids spare hashing 16 GB of holes; only headers are read here.
                content: path.endsWith('.safetensors') ? { file: `${checkpoint.dir}/${path}`, sha256: createHash('sha256').update(path).digest('hex') } : { file: `${checkpoint.dir}/${path}` },
              })),
            },
          ],
        },
      ],
    });
    files = checkpoint.files.map((path) => ({ path, url: `${hub.url}/${REPO}/resolve/main/${path}`, needsToken: true }));
  });
  afterAll(async () => {
    await hub?.close();
    checkpoint?.dispose();
  });

  it('describes a sharded checkpoint with two range reads per shard, the token only to the hub', async () => {
    hub.stats.reset();
    const reader = new HttpRangeReader(files, { requestTimeoutMs: 10_000, token: async () => TOKEN });
    const description = await describeArtifact(reader, checkpoint.files);
    expect(description.weights).toMatchObject({ source: 'safetensors-headers', bytes: checkpoint.dataBytes });
    expect(description.shape).toMatchObject({ architecture: 'llama', layers: 32, kvHeads: 8, headDim: 128 });
    // The hub records a request once its response has ended, which can trail the client's read.
    const cdn = () => hub.stats.requests.filter((r) => r.url.startsWith('/cdn-lfs/'));
    const shards = await waitFor('8 CDN requests recorded', () => (cdn().length >= 8 ? cdn() : undefined));
    expect(shards).toHaveLength(8);
    // Every shard byte served is a header byte: the data is never read.
    expect(shards.every((r) => r.bytes <= 1024 * 1024)).toBe(true);
  });

  it('sends no token for a file that does not need one (the private repository refuses it)', async () => {
    const reader = new HttpRangeReader(
      files.map((f) => ({ ...f, needsToken: false })),
      { requestTimeoutMs: 10_000, token: async () => TOKEN },
    );
    await expect(reader.readSmallFile('config.json', 1024 * 1024)).rejects.toThrow(/config\.json .*HTTP 401/);
  });

  it('refuses a small file over its cap, by the manifest size without a request', async () => {
    const reader = new HttpRangeReader([{ ...files[0], size: 5000 }], { requestTimeoutMs: 10_000, token: async () => TOKEN });
    await expect(reader.readSmallFile('config.json', 100)).rejects.toThrow('config.json is 5000 bytes, more than the 100 bytes allowed for it');
    expect(reader.requests).toBe(0);
    const unsized = new HttpRangeReader([files[0]], { requestTimeoutMs: 10_000, token: async () => TOKEN });
    await expect(unsized.readSmallFile('config.json', 100)).rejects.toMatchObject({ transient: false, message: 'config.json is more than the 100 bytes allowed for it' });
  });

  it('times out a hub that does not answer, as a transient failure', async () => {
    hub.setFault(REPO, 'config.json', { latencyMs: 2000 });
    try {
      const reader = new HttpRangeReader(files, { requestTimeoutMs: 200, token: async () => TOKEN });
      const err = await reader.readSmallFile('config.json', 1024 * 1024).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RangeReadError);
      expect(err).toMatchObject({ transient: true, message: expect.stringContaining('no answer within 200 ms') });
    } finally {
      hub.setFault(REPO, 'config.json', undefined);
    }
  });
});

describe('HttpRangeReader against a server that ignores Range', () => {
  let server: Server;
  let url: string;
  /** Bytes written per request: what a reader that stops early still got is the sockets' buffers. */
  const sent: number[] = [];
  // Larger than loopback's socket buffers (several MiB each way), so a reader that read it all
  // could not pass for one that stopped early.
  const body = Buffer.alloc(64 * 1024 * 1024, 7);

  beforeAll(async () => {
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-length': body.length });
      // Streamed in pieces, so what the reader cancels is never sent.
      const request = sent.push(0) - 1;
      let at = 0;
      const next = (): void => {
        while (at < body.length) {
          const piece = body.subarray(at, at + 64 * 1024);
          at += piece.length;
          sent[request] += piece.length;
          if (!res.write(piece)) return void res.once('drain', next);
        }
        res.end();
      };
      res.on('close', () => (at = body.length));
      next();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/model.safetensors`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('takes the first bytes of a 200 for a read from 0 and refuses one from later on', async () => {
    const reader = new HttpRangeReader([{ path: 'model.safetensors', url, needsToken: false }], { requestTimeoutMs: 10_000 });
    const prefix = await reader.readRange('model.safetensors', 0, 7);
    expect([...prefix]).toEqual([7, 7, 7, 7, 7, 7, 7, 7]);
    await expect(reader.readRange('model.safetensors', 8, 100)).rejects.toMatchObject({ transient: false, message: expect.stringContaining('ignores Range') });
    expect(sent).toHaveLength(2);
    for (const bytes of sent) expect(bytes).toBeLessThan(body.length / 2);
  });
});
