import http from 'http';
import https from 'https';
import { DeliveryError, SourceError } from './errors';
import { readLocalRange } from './local-file';

export interface HttpAgents {
  readonly http: http.Agent;
  readonly https: https.Agent;
}

export function createAgents(): HttpAgents {
  // keep-alive: a manifest's chunks reuse a few connections instead of a handshake each
  return { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };
}

export function destroyAgents(a: HttpAgents): void {
  a.http.destroy();
  a.https.destroy();
}

export interface RangeRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** first byte, inclusive */
  readonly start: number;
  /** last byte + 1 */
  readonly end: number;
  /** the whole file's size, checked against Content-Range so a different file is never spliced in */
  readonly fileSize: number;
  /** no byte for this long fails the request as Stalled */
  readonly stallMs: number;
  readonly signal?: AbortSignal;
  readonly agents: HttpAgents;
}

const MAX_REDIRECTS = 5;
const CONTENT_RANGE = /^bytes (\d+)-(\d+)\/(\d+|\*)$/;

/**
 * Streams bytes [start, end) of a file to `sink`, which is awaited before the next buffer is
 * read: a slow disk or a bandwidth cap pauses the socket instead of growing a buffer.
 * Resolves when every byte was handed to the sink; rejects with a SourceError otherwise.
 */
export async function fetchRange(req: RangeRequest, sink: (buf: Buffer) => Promise<void>): Promise<void> {
  let url = new URL(req.url);
  if (url.protocol === 'file:') return readLocalRange(url, req, sink);
  let headers: Record<string, string> = { ...req.headers };
  for (let hop = 0; ; hop++) {
    const res = await open(url, headers, req);
    const status = res.statusCode ?? 0;
    if (status >= 300 && status < 400 && res.headers.location) {
      res.resume();
      if (hop >= MAX_REDIRECTS) throw new SourceError('BadResponse', `${redact(req.url)}: more than ${MAX_REDIRECTS} redirects`);
      const next = new URL(res.headers.location, url);
      // credentials go to the host they were given for, never to a CDN a redirect names
      if (next.host !== url.host) headers = withoutAuth(headers);
      url = next;
      continue;
    }
    await consume(res, url, req, sink);
    return;
  }
}

function open(url: URL, headers: Record<string, string>, req: RangeRequest): Promise<http.IncomingMessage> {
  const isHttps = url.protocol === 'https:';
  const mod = isHttps ? https : http;
  return new Promise((resolve, reject) => {
    const r = mod.request(
      url,
      {
        method: 'GET',
        agent: isHttps ? req.agents.https : req.agents.http,
        headers: { ...headers, range: `bytes=${req.start}-${req.end - 1}`, 'accept-encoding': 'identity' },
        signal: req.signal,
      },
      resolve,
    );
    // a connection that never answers is a stall too
    r.setTimeout(req.stallMs, () => r.destroy(new SourceError('Stalled', `${redact(url.href)}: no response in ${req.stallMs} ms`)));
    r.on('error', (err) => reject(err instanceof SourceError ? err : new SourceError('Unavailable', `${redact(url.href)}: ${err.message}`)));
    r.end();
  });
}

async function consume(res: http.IncomingMessage, url: URL, req: RangeRequest, sink: (buf: Buffer) => Promise<void>): Promise<void> {
  const where = redact(url.href);
  const status = res.statusCode ?? 0;
  const fail = (err: SourceError): never => {
    res.destroy();
    throw err;
  };
  if (status === 404 || status === 410) fail(new SourceError('NotFound', `${where}: HTTP ${status}`));
  if (status === 401 || status === 403) fail(new SourceError('BadResponse', `${where}: HTTP ${status} (credentials refused)`));
  if (status !== 206 && status !== 200) fail(new SourceError('Unavailable', `${where}: HTTP ${status}`));
  if (status === 206) {
    const m = CONTENT_RANGE.exec(String(res.headers['content-range'] ?? ''));
    if (!m) fail(new SourceError('BadResponse', `${where}: 206 without a Content-Range "bytes a-b/size"`));
    const [, a, b, total] = m as RegExpExecArray;
    if (Number(a) !== req.start || Number(b) !== req.end - 1) {
      fail(new SourceError('BadResponse', `${where}: asked bytes ${req.start}-${req.end - 1}, got ${a}-${b}`));
    }
    if (total !== '*' && Number(total) !== req.fileSize) {
      fail(new SourceError('BadResponse', `${where}: file is ${total} bytes, the manifest says ${req.fileSize}`));
    }
  } else {
    // a source without Range support is usable only from byte 0
    if (req.start !== 0) fail(new SourceError('BadResponse', `${where}: ignores Range (200 for bytes ${req.start}-)`));
    const length = res.headers['content-length'];
    if (length !== undefined && Number(length) !== req.fileSize) {
      fail(new SourceError('BadResponse', `${where}: file is ${length} bytes, the manifest says ${req.fileSize}`));
    }
  }

  let lastByteAt = Date.now();
  const watchdog = setInterval(() => {
    if (Date.now() - lastByteAt > req.stallMs) res.destroy(new SourceError('Stalled', `${where}: no byte for ${req.stallMs} ms`));
  }, Math.max(10, Math.floor(req.stallMs / 4)));
  let want = req.end - req.start;
  try {
    for await (const chunk of res as AsyncIterable<Buffer>) {
      lastByteAt = Date.now();
      const buf = chunk.length > want ? chunk.subarray(0, want) : chunk;
      want -= buf.length;
      if (buf.length > 0) {
        try {
          await sink(buf);
        } catch (err) {
          res.destroy();
          throw err instanceof DeliveryError || req.signal?.aborted ? err : new DeliveryError('CacheIOError', (err as Error).message);
        }
      }
      lastByteAt = Date.now();
      // a 206 ends by itself and leaves the connection reusable; a 200 for a prefix must be cut
      if (want === 0 && status === 200 && req.end < req.fileSize) break;
    }
  } catch (err) {
    // the sink's own failures (the disk) are not the source's fault: they pass through as they are
    if (err instanceof SourceError || err instanceof DeliveryError) throw err;
    if (req.signal?.aborted) throw err;
    throw new SourceError('Unavailable', `${where}: ${(err as Error).message}`);
  } finally {
    clearInterval(watchdog);
  }
  if (want > 0) {
    res.destroy();
    throw new SourceError('Unavailable', `${where}: connection ended ${want} bytes short`);
  }
  // a 200 for a sub-range leaves bytes we did not ask for: drop the connection, not drain it
  if (!res.complete) res.destroy();
}

function withoutAuth(h: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(h).filter(([k]) => k.toLowerCase() !== 'authorization' && k.toLowerCase() !== 'cookie'));
}

/** URLs may carry signed query strings; logs and errors show scheme, host and path only. */
export function redact(href: string): string {
  try {
    const u = new URL(href);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '<invalid url>';
  }
}
