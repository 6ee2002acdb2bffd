// The fast HTTP client of a ranged download, for plain http:// sources (peers, in-cluster mirrors,
// the hub simulator): one GET per connection at a time over a TCP socket that reads straight into
// the sink's buffers (net.Socket's `onread`), so a body byte is copied once, by the kernel, on
// its way to the file. Node's http client copies every body segment out of the socket's buffer
// into a new one, then the cache copied it again into its write batch: with the allocations that
// came with them, those copies were the largest user-space cost of a download (perf: 11 % of the
// downloader's CPU in memmove alone).
//
// It speaks only what a ranged GET needs: a status line, headers, and a body of Content-Length
// bytes. A body of any other framing (chunked, or read to the connection's end) is refused with
// PlainHttpUnsupported, and range-fetch.ts asks Node's http client instead.
import { validateHeaderName, validateHeaderValue } from 'http';
import net from 'net';
import { BatchFiller, type RangeSink } from './batch-filler';
import type { SourceRequest, SourceResponse } from './source-response';

/** a response head longer than this is refused */
const MAX_HEAD_BYTES = 64 * 1024;
/** what a paused socket reads into when it resumes, before the bytes move to the sink's buffer */
const SPARE_BYTES = 16 * 1024;
const HEAD_END = Buffer.from('\r\n\r\n');

/** The response cannot be read by this client (its framing); the request is sent again through Node's. */
export class PlainHttpUnsupported extends Error {}

/** Idle keep-alive connections by host and port, shared by every stream of a cache. */
export class PlainHttpPool {
  private readonly idle = new Map<string, PlainConnection[]>();
  private closed = false;

  constructor(
    private readonly maxIdlePerHost = 32,
    private readonly idleTimeoutMs = 4_000,
  ) {}

  /** An idle connection to host:port, or a new one. */
  connection(host: string, port: number): PlainConnection {
    const key = `${host}:${port}`;
    const list = this.idle.get(key);
    for (let c = list?.pop(); c; c = list?.pop()) {
      if (c.usable) {
        c.leaveIdle();
        return c;
      }
    }
    return new PlainConnection(host, port);
  }

  /** Takes back a connection whose last response was read to its end; anything else is closed. */
  release(c: PlainConnection): void {
    const key = `${c.host}:${c.port}`;
    const list = this.idle.get(key) ?? [];
    if (this.closed || !c.usable || list.length >= this.maxIdlePerHost) {
      c.destroy();
      return;
    }
    list.push(c);
    this.idle.set(key, list);
    c.enterIdle(this.idleTimeoutMs, () => {
      const i = list.indexOf(c);
      if (i >= 0) list.splice(i, 1);
    });
    // read while idle, so that a server closing it is seen now (any byte read then closes it too)
    c.resume();
  }

  destroy(): void {
    this.closed = true;
    for (const list of this.idle.values()) for (const c of list) c.destroy();
    this.idle.clear();
  }
}

/** What a connection does with the bytes it reads: parses a head, fills a sink, or nothing. */
interface Reader {
  /** the free buffer the next read goes into; undefined: none now (a read that comes anyway lands in a spare) */
  target(): Buffer | undefined;
  /** `n` bytes were read into the buffer target() returned */
  read(buf: Buffer, n: number): void;
  /** the connection ended (err undefined: the server closed it) */
  ended(err: Error | undefined): void;
}

export class PlainConnection {
  readonly socket: net.Socket;
  /** sent a request and read a whole response before: a failure before the next response's first byte is the server having closed it while idle */
  reused = false;
  private reader: Reader | undefined;
  private spare: Buffer | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private onIdleEnd: (() => void) | undefined;
  private dead = false;

  constructor(
    readonly host: string,
    readonly port: number,
  ) {
    this.socket = net.connect({
      host,
      port,
      noDelay: true,
      onread: {
        buffer: () => this.reader?.target() ?? (this.spare ??= Buffer.allocUnsafe(SPARE_BYTES)),
        callback: (n, buf) => {
          if (!this.reader) {
            // bytes nobody asked for: the connection's framing is lost
            this.destroy();
            return false;
          }
          // what the buffer function returned: a Buffer (the reader's target or the spare)
          this.reader.read(buf as Buffer, n);
          return true;
        },
      },
    });
    const end = (err?: Error): void => {
      this.dead = true;
      const r = this.reader;
      this.reader = undefined;
      this.leaveIdle();
      r?.ended(err);
    };
    this.socket.on('error', end);
    this.socket.on('end', () => end(undefined));
    this.socket.on('close', () => end(undefined));
  }

  get usable(): boolean {
    return !this.dead && !this.socket.destroyed;
  }

  attach(r: Reader): void {
    this.reader = r;
  }

  detach(): void {
    this.reader = undefined;
  }

  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
  }

  enterIdle(ms: number, onEnd: () => void): void {
    this.onIdleEnd = onEnd;
    this.idleTimer = setTimeout(() => this.destroy(), ms).unref();
  }

  leaveIdle(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    const f = this.onIdleEnd;
    this.onIdleEnd = undefined;
    f?.();
  }

  destroy(err?: Error): void {
    this.dead = true;
    this.socket.destroy(err);
  }
}

/** Sends the GET and resolves with the response once its head has arrived. */
export function openPlainHttp(req: SourceRequest, pool: PlainHttpPool): Promise<SourceResponse> {
  const port = Number(req.url.port || 80);
  // an IPv6 literal comes bracketed in URL.hostname
  const host = req.url.hostname.replace(/^\[(.*)\]$/, '$1');
  const head = requestHead(req);
  const attempt = (conn: PlainConnection): Promise<SourceResponse> =>
    new Promise<PlainResponse>((resolve, reject) => {
      const response = new PlainResponse(conn, pool, resolve, reject);
      const onAbort = (): void => response.abort(req.signal.reason instanceof Error ? req.signal.reason : new Error('aborted'));
      if (req.signal.aborted) return onAbort();
      req.signal.addEventListener('abort', onAbort, { once: true });
      response.onDone = () => req.signal.removeEventListener('abort', onAbort);
      // no resume() needed: a new connection reads from the start, a kept-alive one since the pool took it back
      conn.socket.write(head);

    });
  const conn = pool.connection(host, port);
  return attempt(conn).catch((err: unknown) => {
    // a kept-alive connection the server closed while it was idle: once more on a new one
    if (conn.reused && err instanceof StaleConnection && !req.signal.aborted) return attempt(pool.connection(host, port));
    throw err instanceof StaleConnection ? err.cause : err;
  });
}

class StaleConnection extends Error {
  constructor(override readonly cause: Error) {
    super(cause.message);
  }
}

function requestHead(req: SourceRequest): string {
  const lines = [`GET ${req.url.pathname}${req.url.search} HTTP/1.1`, `Host: ${req.url.host}`];
  for (const [name, value] of Object.entries(req.headers)) {
    const lower = name.toLowerCase();
    if (lower === 'host' || lower === 'range' || lower === 'accept-encoding' || lower === 'connection') continue;
    // as Node's client does: a name or value that would break the request's framing is refused
    validateHeaderName(name);
    validateHeaderValue(name, value);
    lines.push(`${name}: ${value}`);
  }
  lines.push(`Range: bytes=${req.range[0]}-${req.range[1]}`, 'Accept-Encoding: identity', 'Connection: keep-alive', '', '');
  return lines.join('\r\n');
}

/**
 * One response on a connection: first its head (read into a small buffer of its own), then its
 * body, read into the sink's buffers in place.
 */
class PlainResponse implements SourceResponse, Reader {
  status = 0;
  onDone: (() => void) | undefined;
  private readonly headers = new Map<string, string>();
  private headBuf: Buffer | undefined = Buffer.allocUnsafe(MAX_HEAD_BYTES);
  private headLen = 0;
  /** body bytes read from the socket and not yet taken: the head's last read carried them, or the sink was full */
  private pending: Buffer | undefined;
  /** body bytes not yet read from the socket */
  private left = 0;
  private keepAlive = true;
  private failure: Error | undefined;
  private reading: { filler: BatchFiller; want: number; onData: () => void; done: (err?: Error) => void } | undefined;

  constructor(
    private readonly conn: PlainConnection,
    private readonly pool: PlainHttpPool,
    private opened: ((r: PlainResponse) => void) | undefined,
    private failedToOpen: ((err: Error) => void) | undefined,
  ) {
    conn.attach(this);
  }

  header(name: string): string | undefined {
    return this.headers.get(name);
  }

  // ---- Reader: what the connection reads -------------------------------------------------------

  target(): Buffer | undefined {
    if (this.headBuf) return this.headBuf.subarray(this.headLen);
    const b = this.reading;
    if (!b || !b.filler.ready || this.pending) return undefined;
    // never more than the range wants: the bytes after it are not this body's
    const t = b.filler.target();
    return t.length > b.want ? t.subarray(0, b.want) : t;
  }

  read(buf: Buffer, n: number): void {
    if (this.headBuf) return this.readHead(buf, n);
    if (n > this.left) return this.fail(new Error('more bytes than Content-Length'));
    this.left -= n;
    if (!this.reading || this.pending) {
      // read while nothing asked for them (a socket delivers what it had as it pauses): kept
      this.pending = this.pending ? Buffer.concat([this.pending, buf.subarray(0, n)]) : Buffer.from(buf.subarray(0, n));
      this.conn.pause();
      return;
    }
    this.reading.onData();
    this.take(buf, n);
  }

  ended(err: Error | undefined): void {
    const e = err ?? new Error(this.headBuf ? 'connection closed before a response' : `connection ended ${this.reading?.want ?? this.left} bytes short`);
    this.fail(this.headBuf && this.headLen === 0 ? new StaleConnection(e) : e);
  }

  // ---- SourceResponse ------------------------------------------------------------------------

  body(want: number, sink: RangeSink, onData: () => void): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (want > this.left + (this.pending?.length ?? 0)) return Promise.reject(new Error(`asked ${want} body bytes, the response has ${this.left + (this.pending?.length ?? 0)}`));
    if (want === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const filler = new BatchFiller(sink);
      const done = (err?: Error): void => {
        this.reading = undefined;
        this.conn.pause();
        // what arrived before a failure of the source is written out; a failed write ends it at once
        filler.end(err).then(resolve, reject);
      };
      const b = { filler, want, onData, done };
      this.reading = b;
      this.continueReading(b);
    });
  }

  close(): void {
    this.onDone?.();
    this.conn.detach();
    if (this.failure || this.left > 0 || this.pending || !this.keepAlive) {
      this.conn.destroy();
      return;
    }
    this.conn.reused = true;
    this.pool.release(this.conn);
  }

  abort(err: Error): void {
    this.fail(err);
  }

  // ---- the head -------------------------------------------------------------------------------

  private readHead(got: Buffer, n: number): void {
    const buf = this.headBuf as Buffer;
    const from = Math.max(0, this.headLen - 3);
    // a read into the connection's spare (it was read before this response was attached) moves here
    const inPlace = got.buffer === buf.buffer && got.byteOffset === buf.byteOffset + this.headLen;
    if (!inPlace) {
      if (n > buf.length - this.headLen) return this.fail(new Error(`response head longer than ${MAX_HEAD_BYTES} bytes`));
      got.copy(buf, this.headLen, 0, n);
    }
    this.headLen += n;
    const end = buf.subarray(0, this.headLen).indexOf(HEAD_END, from);
    if (end < 0) {
      if (this.headLen >= buf.length) this.fail(new Error(`response head longer than ${MAX_HEAD_BYTES} bytes`));
      return;
    }
    try {
      this.parseHead(buf.toString('latin1', 0, end));
    } catch (err) {
      return this.fail(err as Error);
    }
    const extra = buf.subarray(end + HEAD_END.length, this.headLen);
    this.headBuf = undefined;
    if (extra.length > this.left) return this.fail(new Error('more bytes than Content-Length'));
    // kept until a body() asks for them (a copy: the head buffer is dropped)
    if (extra.length > 0) this.pending = Buffer.from(extra);
    this.left -= extra.length;
    // nothing more is read until the caller asks for the body
    this.conn.pause();
    const opened = this.opened;
    this.opened = undefined;
    this.failedToOpen = undefined;
    opened?.(this);
  }

  private parseHead(text: string): void {
    const [statusLine, ...lines] = text.split('\r\n');
    const m = /^HTTP\/1\.([01]) (\d{3})(?: .*)?$/.exec(statusLine);
    if (!m) throw new Error(`not an HTTP/1.x status line: ${JSON.stringify(statusLine.slice(0, 80))}`);
    this.status = Number(m[2]);
    if (this.status < 200) throw new PlainHttpUnsupported(`interim response ${this.status}`);
    for (const line of lines) {
      const colon = line.indexOf(':');
      if (colon <= 0) throw new Error(`malformed header line ${JSON.stringify(line.slice(0, 80))}`);
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      const had = this.headers.get(name);
      this.headers.set(name, had === undefined ? value : `${had}, ${value}`);
    }
    if (this.headers.has('transfer-encoding')) throw new PlainHttpUnsupported('a body framed by Transfer-Encoding');
    const length = this.headers.get('content-length');
    if (length === undefined) {
      // a redirect or an error without a body length: its body is not read, the connection is closed
      if (this.status >= 300 || this.status === 204) {
        this.keepAlive = false;
        return;
      }
      throw new PlainHttpUnsupported('a body without Content-Length');
    }
    if (!/^\d+$/.test(length)) throw new Error(`Content-Length ${JSON.stringify(length)} is not one number`);
    this.left = Number(length);
    const connection = (this.headers.get('connection') ?? '').toLowerCase();
    this.keepAlive = m[1] === '1' ? !connection.includes('close') : connection.includes('keep-alive');
  }

  // ---- the body -------------------------------------------------------------------------------

  /** `n` body bytes in `buf`: in place in the filler's buffer when the socket read into it, else copied there. */
  private take(buf: Buffer, n: number): void {
    const b = this.reading as NonNullable<PlainResponse['reading']>;
    const f = b.filler;
    const t = f.ready ? f.target() : undefined;
    let used: number;
    if (t && buf.buffer === t.buffer && buf.byteOffset === t.byteOffset) {
      used = Math.min(n, b.want);
      f.advance(used);
    } else {
      used = f.copy(buf.subarray(0, Math.min(n, b.want)));
    }
    b.want -= used;
    // bytes the sink could not take now: for this body once the sink drains, or for the next
    if (used < n) this.pending = Buffer.from(buf.subarray(used, n));
    if (f.error || b.want === 0) return b.done();
    if (this.pending || !f.ready) {
      this.conn.pause();
      void f.whenReady().then(() => this.continueReading(b));
    }
  }

  /** Takes the bytes kept, then reads on, once the sink has room. */
  private continueReading(b: NonNullable<PlainResponse['reading']>): void {
    if (this.reading !== b) return;
    if (b.filler.error) return b.done();
    if (!b.filler.ready) {
      void b.filler.whenReady().then(() => this.continueReading(b));
      return;
    }
    const p = this.pending;
    if (p) {
      this.pending = undefined;
      this.take(p, p.length);
      if (this.reading !== b || this.pending || !b.filler.ready) return;
    }
    this.conn.resume();
  }

  private fail(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    this.conn.detach();
    this.conn.destroy();
    this.onDone?.();
    const failedToOpen = this.failedToOpen;
    this.opened = undefined;
    this.failedToOpen = undefined;
    if (failedToOpen) return failedToOpen(err);
    this.reading?.done(err instanceof StaleConnection ? err.cause : err);
  }
}
