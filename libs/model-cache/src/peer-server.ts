import { createHash, timingSafeEqual } from 'crypto';
import { createReadStream } from 'fs';
import http from 'http';
import type { AddressInfo } from 'net';
import { parseRange } from './byte-range';
import type { BlobDigest } from './manifest';

/** What the peer server reads: only blobs whose hash matched (ModelCache.verifiedBlob). */
export interface VerifiedBlobSource {
  verifiedBlob(d: BlobDigest): { path: string; size: number } | undefined;
}

export interface PeerServerOptions {
  readonly cache: VerifiedBlobSource;
  /** bearer token a peer must send; compared in constant time */
  readonly token: string;
  /** default 127.0.0.1; a node serves its peers on its cluster address */
  readonly host?: string;
  /** 0: any free port */
  readonly port?: number;
  /** connections at once; Node closes the ones beyond this at once (default 64) */
  readonly maxConnections?: number;
}

export interface PeerServer {
  readonly url: string;
  readonly port: number;
  /** bytes of blob content sent */
  readonly bytesServed: number;
  close(): Promise<void>;
}

const BLOB_PATH = /^\/blobs\/(sha256|gitsha1)\/([0-9a-f]{40}|[0-9a-f]{64})$/;

/**
 * Serves this node's verified blobs to its peers: `GET|HEAD /blobs/<alg>/<hex>` with
 * `Authorization: Bearer <token>` and an optional single `Range`.
 */
export async function servePeerBlobs(o: PeerServerOptions): Promise<PeerServer> {
  if (typeof o.token !== 'string' || o.token.length < 16) throw new RangeError('token: expected a secret of at least 16 characters');
  const expected = createHash('sha256').update(o.token).digest();
  let bytesServed = 0;
  const server = http.createServer((req, res) => {
    const auth = req.headers.authorization ?? '';
    const given = createHash('sha256').update(auth.startsWith('Bearer ') ? auth.slice(7) : '').digest();
    // hashes of equal length, compared in constant time: the token's length and prefix leak nothing
    if (!timingSafeEqual(given, expected)) return reply(res, 401, 'a valid bearer token is required', { 'www-authenticate': 'Bearer' });
    if (req.method !== 'GET' && req.method !== 'HEAD') return reply(res, 405, 'GET or HEAD only', { allow: 'GET, HEAD' });
    const m = BLOB_PATH.exec(req.url?.split('?')[0] ?? '');
    if (!m) return reply(res, 404, 'expected /blobs/<sha256|gitsha1>/<hex>');
    const alg = m[1] as BlobDigest['alg'];
    if ((alg === 'sha256') !== (m[2].length === 64)) return reply(res, 404, `a ${alg} digest has ${alg === 'sha256' ? 64 : 40} hex digits`);
    const blob = o.cache.verifiedBlob({ alg, hex: m[2] });
    if (!blob) return reply(res, 404, 'this node holds no verified copy of that blob');
    const range = parseRange(req.headers.range, blob.size);
    if (range === 'invalid') return reply(res, 400, 'Range: expected one "bytes=a-b", "bytes=a-" or "bytes=-n"');
    if (range === 'unsatisfiable') return reply(res, 416, `the blob has ${blob.size} bytes`, { 'content-range': `bytes */${blob.size}` });
    const start = range?.start ?? 0;
    const end = range?.end ?? blob.size - 1;
    const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/octet-stream', 'accept-ranges': 'bytes', 'content-length': Math.max(0, end - start + 1), etag: `"${m[2]}"` };
    if (range) headers['content-range'] = `bytes ${start}-${end}/${blob.size}`;
    res.writeHead(range ? 206 : 200, headers);
    if (req.method === 'HEAD' || blob.size === 0) return res.end();
    const stream = createReadStream(blob.path, { start, end, highWaterMark: 256 * 1024 });
    stream.on('data', (d) => (bytesServed += d.length));
    stream.on('error', () => res.destroy());
    res.on('close', () => stream.destroy());
    stream.pipe(res);
  });
  server.maxConnections = o.maxConnections ?? 64;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, o.host ?? '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const host = o.host ?? '127.0.0.1';
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    get bytesServed() {
      return bytesServed;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function reply(res: http.ServerResponse, status: number, message: string, headers: http.OutgoingHttpHeaders = {}): void {
  const body = JSON.stringify({ error: message });
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
