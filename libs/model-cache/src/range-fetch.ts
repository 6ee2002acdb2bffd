import http from 'http';
import https from 'https';
import { BatchFiller, type RangeSink } from './batch-filler';
import { DeliveryError, SourceError } from './errors';
import { readLocalRange } from './local-file';
import { openNodeHttp } from './node-http-source';
import { openPlainHttp, PlainHttpPool, PlainHttpUnsupported } from './plain-http';
import type { SourceResponse } from './source-response';

export type { RangeSink } from './batch-filler';

/** The connections of one cache's downloads: plain http through its own pool, https through Node's agents. */
export interface HttpAgents {
  readonly plain: PlainHttpPool;
  readonly http: http.Agent;
  readonly https: https.Agent;
}

export function createAgents(): HttpAgents {
  // keep-alive: a manifest's chunks reuse a few connections instead of a handshake each
  return { plain: new PlainHttpPool(), http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };
}

export function destroyAgents(a: HttpAgents): void {
  a.plain.destroy();
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
 * Fetches bytes [start, end) of a file into the sink's buffers, each written out (`sink.write`)
 * before it is filled again: a slow disk or a bandwidth cap pauses the socket instead of growing
 * a buffer. Resolves when every byte was written; rejects with a SourceError otherwise, after
 * writing the bytes that did arrive (so a retry asks only for the rest), or with the sink's own
 * error (a DeliveryError) if a write failed.
 */
export async function fetchRange(req: RangeRequest, sink: RangeSink): Promise<void> {
  let url = new URL(req.url);
  if (url.protocol === 'file:') return readLocalInto(url, req, sink);
  let headers: Record<string, string> = { ...req.headers };
  // plain http goes through the lean client unless a response needs Node's (see plain-http.ts)
  let plain = true;
  for (let hop = 0; ; ) {
    const watch = new StallWatch(req.stallMs, url, req.signal);
    let res: SourceResponse;
    try {
      const sourceReq = { url, headers, range: [req.start, req.end - 1] as const, signal: watch.signal };
      res = await (url.protocol === 'http:' && plain ? openPlainHttp(sourceReq, req.agents.plain) : openNodeHttp(sourceReq, req.agents));
    } catch (err) {
      watch.stop();
      if (err instanceof PlainHttpUnsupported) {
        plain = false;
        continue;
      }
      throw sourceError(err, url, req.signal);
    }
    let closed = false;
    try {
      const location = res.header('location');
      if (res.status >= 300 && res.status < 400 && location) {
        closed = true;
        res.close();
        if (++hop > MAX_REDIRECTS) throw new SourceError('BadResponse', `${redact(req.url)}: more than ${MAX_REDIRECTS} redirects`);
        const next = new URL(location, url);
        // credentials go to the host they were given for, never to a CDN a redirect names
        if (next.host !== url.host) headers = withoutAuth(headers);
        url = next;
        plain = true;
        continue;
      }
      checkResponse(res, url, req);
      watch.reading(res);
      try {
        await res.body(req.end - req.start, sink, watch.tick);
      } catch (err) {
        throw sourceError(err, url, req.signal);
      }
      closed = true;
      res.close();
      return;
    } catch (err) {
      if (!closed) res.abort(err as Error);
      throw err;
    } finally {
      watch.stop();
    }
  }
}

/** Refuses a response that is not the bytes asked for: an error status, another range, another file. */
function checkResponse(res: SourceResponse, url: URL, req: RangeRequest): void {
  const where = redact(url.href);
  const status = res.status;
  if (status === 404 || status === 410) throw new SourceError('NotFound', `${where}: HTTP ${status}`);
  if (status === 401 || status === 403) throw new SourceError('BadResponse', `${where}: HTTP ${status} (credentials refused)`);
  if (status !== 206 && status !== 200) throw new SourceError('Unavailable', `${where}: HTTP ${status}`);
  if (status === 206) {
    const m = CONTENT_RANGE.exec(res.header('content-range') ?? '');
    if (!m) throw new SourceError('BadResponse', `${where}: 206 without a Content-Range "bytes a-b/size"`);
    const [, a, b, total] = m;
    if (Number(a) !== req.start || Number(b) !== req.end - 1) {
      throw new SourceError('BadResponse', `${where}: asked bytes ${req.start}-${req.end - 1}, got ${a}-${b}`);
    }
    if (total !== '*' && Number(total) !== req.fileSize) {
      throw new SourceError('BadResponse', `${where}: file is ${total} bytes, the manifest says ${req.fileSize}`);
    }
  } else {
    // a source without Range support is usable only from byte 0
    if (req.start !== 0) throw new SourceError('BadResponse', `${where}: ignores Range (200 for bytes ${req.start}-)`);
    const length = res.header('content-length');
    if (length !== undefined && Number(length) !== req.fileSize) {
      throw new SourceError('BadResponse', `${where}: file is ${length} bytes, the manifest says ${req.fileSize}`);
    }
  }
}

/**
 * No byte for `stallMs` (no response head, or no body byte) fails the request as Stalled: its
 * signal aborts (which fails the open) and the response being read is aborted.
 */
class StallWatch {
  private readonly controller = new AbortController();
  readonly signal: AbortSignal;
  private last = Date.now();
  private res: SourceResponse | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(stallMs: number, url: URL, outer: AbortSignal | undefined) {
    this.signal = outer ? AbortSignal.any([outer, this.controller.signal]) : this.controller.signal;
    this.timer = setInterval(
      () => {
        if (Date.now() - this.last <= stallMs) return;
        const err = new SourceError('Stalled', `${redact(url.href)}: ${this.res ? `no byte for ${stallMs} ms` : `no response in ${stallMs} ms`}`);
        this.controller.abort(err);
        this.res?.abort(err);
      },
      Math.max(10, Math.floor(stallMs / 4)),
    );
  }

  reading(res: SourceResponse): void {
    this.res = res;
    this.last = Date.now();
  }

  readonly tick = (): void => {
    this.last = Date.now();
  };

  stop(): void {
    clearInterval(this.timer);
  }
}

/** An error of a request as the delivery sees it: the sink's (the disk) and cancellations as they are, anything else a SourceError. */
function sourceError(err: unknown, url: URL, signal: AbortSignal | undefined): unknown {
  if (err instanceof SourceError || err instanceof DeliveryError) return err;
  if (signal?.aborted) return err;
  return new SourceError('Unavailable', `${redact(url.href)}: ${(err as Error).message}`);
}

/** A LOCAL artifact's file: its reads copied into the sink's buffers. */
async function readLocalInto(url: URL, req: RangeRequest, sink: RangeSink): Promise<void> {
  const filler = new BatchFiller(sink);
  try {
    await readLocalRange(url, req, (buf) => filler.put(buf));
  } catch (err) {
    return filler.end(err);
  }
  await filler.end();
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
