// The general HTTP client of a ranged download: Node's http and https modules, keep-alive agents.
// It serves https sources and any response the plain client leaves to it (see plain-http.ts);
// every body byte is copied once from the socket's buffers into the sink's.
import http from 'http';
import https from 'https';
import { BatchFiller, type RangeSink } from './batch-filler';
import type { SourceRequest, SourceResponse } from './source-response';

export function openNodeHttp(req: SourceRequest, agents: { http: http.Agent; https: https.Agent }): Promise<SourceResponse> {
  const isHttps = req.url.protocol === 'https:';
  const mod = isHttps ? https : http;
  return new Promise((resolve, reject) => {
    const r = mod.request(
      req.url,
      {
        method: 'GET',
        agent: isHttps ? agents.https : agents.http,
        headers: { ...req.headers, range: `bytes=${req.range[0]}-${req.range[1]}`, 'accept-encoding': 'identity' },
        signal: req.signal,
      },
      (res) => resolve(new NodeHttpResponse(res)),
    );
    r.on('error', (err) => reject(req.signal.aborted && req.signal.reason instanceof Error ? req.signal.reason : err));
    r.end();
  });
}

class NodeHttpResponse implements SourceResponse {
  readonly status: number;
  private iterator: AsyncIterator<Buffer> | undefined;
  /** bytes of a socket buffer that a body() of a smaller `want` left for the next */
  private rest: Buffer | undefined;

  constructor(private readonly res: http.IncomingMessage) {
    this.status = res.statusCode ?? 0;
  }

  header(name: string): string | undefined {
    const v = this.res.headers[name];
    return Array.isArray(v) ? v.join(', ') : v;
  }

  async body(want: number, sink: RangeSink, onData: () => void): Promise<void> {
    const filler = new BatchFiller(sink);
    const iterator = (this.iterator ??= (this.res as AsyncIterable<Buffer>)[Symbol.asyncIterator]());
    try {
      while (want > 0) {
        let chunk = this.rest;
        this.rest = undefined;
        if (!chunk) {
          const next = await iterator.next();
          if (next.done) throw new Error(`connection ended ${want} bytes short`);
          chunk = next.value;
          onData();
        }
        if (chunk.length > want) {
          this.rest = chunk.subarray(want);
          chunk = chunk.subarray(0, want);
        }
        await filler.put(chunk);
        want -= chunk.length;
      }
    } catch (err) {
      return filler.end(err);
    }
    await filler.end();
    // a body read to its end: one more read sees the end, which gives the socket back to the agent
    if (this.res.complete && !this.rest) await iterator.next();
  }

  close(): void {
    // a redirect's body is drained, so the agent may reuse the connection; a body read to its end
    // leaves it reusable too; anything else (an error, a body cut short) closes it
    if (!this.iterator && this.status >= 300 && this.status < 400) this.res.resume();
    else if (!this.res.complete || this.rest) this.res.destroy();
  }

  abort(err: Error): void {
    this.res.destroy(err);
  }
}
