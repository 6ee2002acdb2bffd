import http from 'http';
import type { AddressInfo } from 'net';
import { SourceError } from './errors';
import { createAgents, destroyAgents, fetchRange, type HttpAgents, type RangeSink } from './range-fetch';

// fetchRange against real HTTP servers: the plain http client (plain-http.ts) for what it reads
// itself, Node's client for what it leaves to it.

const data = Buffer.alloc(3 * 1024 * 1024 + 777);
for (let i = 0; i < data.length; i++) data[i] = (i * 31 + (i >> 12)) & 0xff;

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, range: [number, number]) => void;

async function serve(handler: Handler): Promise<{ url: string; connections: () => number; requests: http.IncomingMessage[]; server: http.Server; close: () => Promise<void> }> {
  let connections = 0;
  const requests: http.IncomingMessage[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req);
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    handler(req, res, m ? [Number(m[1]), Number(m[2])] : [0, data.length - 1]);
  });
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => connections,
    requests,
    server,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const ranged: Handler = (_req, res, [a, b]) => {
  res.writeHead(206, { 'content-length': b - a + 1, 'content-range': `bytes ${a}-${b}/${data.length}` });
  res.end(data.subarray(a, b + 1));
};

/** A sink that keeps copies of what it is given, in order. */
function collect(bufferBytes = 256 * 1024): RangeSink & { bytes: () => Buffer } {
  const got: Buffer[] = [];
  return {
    buffers: [Buffer.alloc(bufferBytes), Buffer.alloc(bufferBytes)],
    write: async (buf, n) => {
      got.push(Buffer.from(buf.subarray(0, n)));
      return undefined;
    },
    bytes: () => Buffer.concat(got),
  };
}

describe('fetchRange', () => {
  let agents: HttpAgents;
  const closers: Array<() => Promise<void>> = [];
  beforeEach(() => {
    agents = createAgents();
  });
  afterEach(async () => {
    destroyAgents(agents);
    while (closers.length) await closers.pop()?.();
  });
  const start = async (h: Handler) => {
    const s = await serve(h);
    closers.push(s.close);
    return s;
  };
  const req = (url: string, startAt: number, end: number, extra: Partial<Parameters<typeof fetchRange>[0]> = {}) => ({ url, headers: {}, start: startAt, end, fileSize: data.length, stallMs: 5_000, agents, ...extra });

  it('reads ranges in order into the sink, over one kept-alive connection', async () => {
    const s = await start(ranged);
    const sink = collect();
    for (const [a, b] of [
      [0, 1_000_000],
      [1_000_000, 1_000_001],
      [1_000_001, data.length],
    ]) {
      await fetchRange(req(`${s.url}/f`, a, b), sink);
    }
    expect(sink.bytes().equals(data)).toBe(true);
    expect(s.connections()).toBe(1);
    expect(s.requests.map((r) => r.headers.range)).toEqual(['bytes=0-999999', 'bytes=1000000-1000000', `bytes=1000001-${data.length - 1}`]);
  });

  it('sees a kept-alive connection the server closed while it was idle, and opens a new one', async () => {
    const s = await start((req, res, range) => {
      res.on('finish', () => setTimeout(() => req.socket.destroy(), 20));
      ranged(req, res, range);
    });
    const sink = collect();
    await fetchRange(req(`${s.url}/f`, 0, 100_000), sink);
    await new Promise((r) => setTimeout(r, 200));
    await fetchRange(req(`${s.url}/f`, 100_000, 200_000), sink);
    expect(sink.bytes().equals(data.subarray(0, 200_000))).toBe(true);
    expect(s.connections()).toBe(2);
    expect(s.requests).toHaveLength(2);
  });

  it('sends a request again on a new connection when the kept-alive one closes before any answer', async () => {
    // a server that closes a connection when a second request comes on it (the race of a keep-alive timeout)
    const served = new WeakSet<object>();
    const s = await start((req, res, range) => {
      if (served.has(req.socket)) return void req.socket.destroy();
      served.add(req.socket);
      ranged(req, res, range);
    });
    const sink = collect();
    for (const [a, b] of [
      [0, 100_000],
      [100_000, 200_000],
      [200_000, 300_000],
    ]) {
      await fetchRange(req(`${s.url}/f`, a, b), sink);
    }
    expect(sink.bytes().equals(data.subarray(0, 300_000))).toBe(true);
    expect(s.connections()).toBe(3);
  });

  it('reads a chunked body through Node’s client', async () => {
    const s = await start((_req, res, [a, b]) => {
      res.writeHead(206, { 'content-range': `bytes ${a}-${b}/${data.length}` });
      // no Content-Length: Node frames the body as chunked
      res.write(data.subarray(a, a + 1000));
      res.end(data.subarray(a + 1000, b + 1));
    });
    const sink = collect();
    await fetchRange(req(`${s.url}/f`, 5, 600_005), sink);
    expect(sink.bytes().equals(data.subarray(5, 600_005))).toBe(true);
  });

  it('writes the bytes that came before the connection died, then says how many were missing', async () => {
    const s = await start((_req, res, [a, b]) => {
      res.writeHead(206, { 'content-length': b - a + 1, 'content-range': `bytes ${a}-${b}/${data.length}` });
      res.write(data.subarray(a, a + 300_000), () => setTimeout(() => res.socket?.destroy(), 50));
    });
    const sink = collect();
    const err = await fetchRange(req(`${s.url}/f`, 0, 1_000_000), sink).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SourceError);
    expect((err as SourceError).kind).toBe('Unavailable');
    expect((err as Error).message).toMatch(/ended 700000 bytes short/);
    expect(sink.bytes().equals(data.subarray(0, 300_000))).toBe(true);
  });

  it('refuses a 206 of another range than the one asked for', async () => {
    const s = await start((_req, res) => {
      res.writeHead(206, { 'content-length': 10, 'content-range': `bytes 0-9/${data.length}` });
      res.end(data.subarray(0, 10));
    });
    const err = await fetchRange(req(`${s.url}/f`, 100, 110), collect()).catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: 'BadResponse' });
    expect((err as Error).message).toMatch(/asked bytes 100-109, got 0-9/);
  });

  it('follows a redirect to another host without the credentials', async () => {
    const cdn = await start(ranged);
    const hub = await start((_req, res) => {
      res.writeHead(302, { location: `${cdn.url}/blob?sig=secret`, 'content-length': 0 });
      res.end();
    });
    const sink = collect();
    await fetchRange(req(`${hub.url}/resolve`, 0, 50_000, { headers: { authorization: 'Bearer hub-token', 'x-trace': 't1' } }), sink);
    expect(sink.bytes().equals(data.subarray(0, 50_000))).toBe(true);
    expect(hub.requests[0].headers.authorization).toBe('Bearer hub-token');
    expect(cdn.requests[0].headers.authorization).toBeUndefined();
    expect(cdn.requests[0].headers['x-trace']).toBe('t1');
    expect(cdn.requests[0].url).toBe('/blob?sig=secret');
  });

  it('fails Stalled when no byte comes for the stall timeout, keeping what came before', async () => {
    const s = await start((_req, res, [a, b]) => {
      res.writeHead(206, { 'content-length': b - a + 1, 'content-range': `bytes ${a}-${b}/${data.length}` });
      res.write(data.subarray(a, a + 4096));
      // then nothing, the connection left open
    });
    const sink = collect();
    const err = await fetchRange(req(`${s.url}/f`, 0, 100_000, { stallMs: 300 }), sink).catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: 'Stalled' });
    expect(sink.bytes().equals(data.subarray(0, 4096))).toBe(true);
  });

  it('refuses a header value that would break the request', async () => {
    const s = await start(ranged);
    const err = await fetchRange(req(`${s.url}/f`, 0, 10, { headers: { 'x-bad': 'a\r\nInjected: 1' } }), collect()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SourceError);
    expect(s.requests).toHaveLength(0);
  });
});
