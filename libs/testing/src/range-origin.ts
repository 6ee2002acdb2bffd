import { createReadStream, statSync } from 'fs';
import http from 'http';
import type { AddressInfo } from 'net';

/** A file the origin serves: bytes in memory, or a file on disk (for big, sparse test files). */
export type OriginFile = Buffer | { readonly file: string };

export interface RangeOriginOptions {
  readonly files: Readonly<Record<string, OriginFile>>;
  /** answer every GET with a 302 to /cdn/<path> first, as the hub's resolve URLs do */
  readonly redirect?: boolean;
  /** bytes per second per response; unset: as fast as the socket takes them */
  readonly bytesPerSecond?: number;
  /** a bearer token every request must carry (redirect targets excepted) */
  readonly token?: string;
}

export interface RangeOrigin {
  readonly url: string;
  /** the URL of a served path */
  urlOf(path: string): string;
  /** body bytes sent, all paths */
  readonly bytesServed: number;
  bytesServedOf(path: string): number;
  /** GET requests answered with a body, per path, with the Range they asked */
  readonly requests: ReadonlyArray<{ path: string; range?: string }>;
  /** the next `times` responses of `path` carry one wrong byte */
  corrupt(path: string, times?: number): void;
  /** the next `times` responses of `path` stop sending after `afterBytes` and hold the connection */
  stall(path: string, afterBytes: number, times?: number): void;
  /** the next `times` requests of `path` get this status */
  fail(path: string, status: number, times?: number): void;
  setBytesPerSecond(bps: number | undefined): void;
  close(): Promise<void>;
}

const PIECE = 64 * 1024;

/** A Range-capable HTTP origin on loopback for download tests, with fault switches. */
export async function startRangeOrigin(o: RangeOriginOptions): Promise<RangeOrigin> {
  const served = new Map<string, number>();
  const requests: Array<{ path: string; range?: string }> = [];
  const corrupt = new Map<string, { times: number }>();
  const stalls = new Map<string, { afterBytes: number; times: number }>();
  const fails = new Map<string, { status: number; times: number }>();
  let bps = o.bytesPerSecond;
  let total = 0;

  const take = <T extends { times: number }>(m: Map<string, T>, path: string): T | undefined => {
    const v = m.get(path);
    if (!v) return undefined;
    if (--v.times <= 0) m.delete(path);
    return v;
  };

  const server = http.createServer((req, res) => {
    void (async () => {
      let path = decodeURIComponent((req.url ?? '/').split('?')[0]).replace(/^\/+/, '');
      const viaCdn = path.startsWith('cdn/');
      if (viaCdn) path = path.slice(4);
      const entry = o.files[path];
      if (!entry) return void res.writeHead(404).end();
      if (o.token && !viaCdn && req.headers.authorization !== `Bearer ${o.token}`) return void res.writeHead(401).end();
      if (o.redirect && !viaCdn) return void res.writeHead(302, { location: `/cdn/${encodeURIComponent(path).replace(/%2F/g, '/')}` }).end();
      const failure = take(fails, path);
      if (failure) return void res.writeHead(failure.status).end();
      const size = Buffer.isBuffer(entry) ? entry.length : statSync(entry.file).size;
      let start = 0;
      let end = size - 1;
      const range = req.headers.range;
      if (range) {
        const m = /^bytes=(\d+)-(\d*)$/.exec(range);
        if (!m || Number(m[1]) >= size) return void res.writeHead(416, { 'content-range': `bytes */${size}` }).end();
        start = Number(m[1]);
        end = m[2] ? Math.min(size - 1, Number(m[2])) : size - 1;
      }
      const length = end - start + 1;
      res.writeHead(range ? 206 : 200, {
        'content-length': length,
        'accept-ranges': 'bytes',
        ...(range ? { 'content-range': `bytes ${start}-${end}/${size}` } : {}),
      });
      if (req.method === 'HEAD') return void res.end();
      requests.push({ path, range });
      const wrong = take(corrupt, path) !== undefined;
      const stall = take(stalls, path);
      let sent = 0;
      const count = (n: number): void => {
        sent += n;
        total += n;
        served.set(path, (served.get(path) ?? 0) + n);
      };
      const source: AsyncIterable<Buffer> = Buffer.isBuffer(entry)
        ? (async function* () {
            for (let at = start; at <= end; at += PIECE) yield entry.subarray(at, Math.min(end + 1, at + PIECE));
          })()
        : createReadStream(entry.file, { start, end, highWaterMark: PIECE });
      for await (const piece0 of source) {
        if (res.destroyed) return;
        let piece = piece0;
        if (stall && sent + piece.length > stall.afterBytes) {
          const head = piece.subarray(0, Math.max(0, stall.afterBytes - sent));
          if (head.length > 0 && !res.write(head)) await new Promise((r) => res.once('drain', r));
          count(head.length);
          return; // hold the connection open, send nothing more: the client must notice the stall
        }
        if (wrong && sent === 0) {
          piece = Buffer.from(piece);
          piece[0] ^= 0xff;
        }
        if (bps) await new Promise((r) => setTimeout(r, (piece.length * 1000) / bps!));
        if (!res.write(piece)) await new Promise((r) => res.once('drain', r));
        count(piece.length);
      }
      res.end();
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    urlOf: (path) => `${url}/${path}`,
    get bytesServed() {
      return total;
    },
    bytesServedOf: (path) => served.get(path) ?? 0,
    requests,
    // times 0 switches a fault off
    corrupt: (path, times = 1) => void (times > 0 ? corrupt.set(path, { times }) : corrupt.delete(path)),
    stall: (path, afterBytes, times = 1) => void (times > 0 ? stalls.set(path, { afterBytes, times }) : stalls.delete(path)),
    fail: (path, status, times = 1) => void (times > 0 ? fails.set(path, { status, times }) : fails.delete(path)),
    setBytesPerSecond: (v) => void (bps = v),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
