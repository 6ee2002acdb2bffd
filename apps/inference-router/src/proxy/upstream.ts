/**
 * The router's HTTP/1.1 client to one engine: an undici `Pool` driven through its `dispatch`
 * handler interface. Node's `http.request` builds a ClientRequest, an IncomingMessage, a
 * stream pair and a dozen listeners for every request, and on the zero-latency benchmark that
 * machinery was most of the router's CPU time; undici writes the request in one go, parses
 * the answer with llhttp and calls back with plain buffers.
 *
 * Connections are kept alive (idle ones close after 4 s, under uvicorn's 5 s, so the engine
 * rarely closes one we are about to reuse), one request at a time per connection (no
 * pipelining: a slow stream must not hold up the request behind it), as many as needed.
 */
import { Pool, errors, type Dispatcher } from 'undici';

/** What the router sends to an engine. Header names are lowercase; undici adds content-length. */
export interface UpstreamRequest {
  readonly path: string;
  /** Flat `[name, value, name, value, …]` list. */
  readonly headers: string[];
  readonly body: Buffer;
}

/** The engine's answer, as it arrives. None of these is called after `UpstreamCall.cancel()`. */
export interface UpstreamHandler {
  /** Status and end-to-end headers (names lowercased, hop-by-hop ones left out; a repeated header is an array). */
  onResponse(status: number, headers: Record<string, string | string[]>): void;
  /** A body chunk; `false` pauses the engine's socket until `UpstreamCall.resume()`. */
  onData(chunk: Buffer): boolean;
  /** The whole body arrived. */
  onEnd(): void;
  onError(error: UpstreamError): void;
}

/**
 * How an exchange with an engine failed:
 * - `connect`: no connection (refused, unreachable, CONNECT_TIMEOUT_S): nothing reached the engine;
 * - `reset`: the connection closed before any answer (often an idle keep-alive connection the
 *   engine closed as we reused it);
 * - `broken`: the connection closed, or the answer was malformed, after the answer started.
 */
export type UpstreamFailure = 'connect' | 'reset' | 'broken';

export class UpstreamError extends Error {
  constructor(
    message: string,
    readonly failure: UpstreamFailure,
    readonly code: string | undefined,
  ) {
    super(message);
    this.name = 'UpstreamError';
  }
}

export interface UpstreamOptions {
  readonly connectTimeoutMs: number;
}

/** Codes of errors raised while connecting: nothing was sent. */
const CONNECT_CODES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT']);

const CANCELLED = new errors.RequestAbortedError('cancelled by the router');

/**
 * The headers of a request to an engine, as undici's flat list: JSON in, `accept` as given,
 * the request id, the engines' API key (UPSTREAM_API_KEY) and the client's trace context.
 */
export function engineRequestHeaders(accept: string, requestId: string, apiKey: string | undefined, traceparent: string | undefined): string[] {
  const headers = ['content-type', 'application/json', 'accept', accept, 'x-request-id', requestId];
  if (apiKey) headers.push('authorization', `Bearer ${apiKey}`);
  if (traceparent !== undefined) headers.push('traceparent', traceparent);
  return headers;
}

/** The connections to one engine endpoint. */
export class Upstream {
  private readonly pool: Pool;

  constructor(
    readonly origin: string,
    private readonly options: UpstreamOptions,
  ) {
    this.pool = new Pool(origin, {
      connections: null,
      pipelining: 1,
      keepAliveTimeout: 4_000,
      keepAliveMaxTimeout: 4_000,
      // The router times requests itself (REQUEST_TIMEOUT_S); streams may pause for long.
      headersTimeout: 0,
      bodyTimeout: 0,
      connectTimeout: options.connectTimeoutMs,
    });
  }

  /**
   * A call whose answer goes to `handler`; `UpstreamCall.send` sends it. Two steps, so that the
   * caller holds the call before any callback (undici reports some failures synchronously).
   */
  prepare(handler: UpstreamHandler): UpstreamCall {
    return new UpstreamCall(this.pool, handler, this.options.connectTimeoutMs);
  }

  /** Closes every connection at once (the replica left, or shutdown). */
  close(): void {
    this.pool.destroy().catch(() => undefined);
  }
}

/** One request in flight on an engine. */
export class UpstreamCall implements Dispatcher.DispatchHandlers {
  private abortRequest: ((err?: Error) => void) | undefined;
  private resumeSocket: (() => void) | undefined;
  private cancelled = false;
  private responded = false;

  constructor(
    private readonly pool: Pool,
    private readonly handler: UpstreamHandler,
    private readonly connectTimeoutMs: number,
  ) {}

  send(request: UpstreamRequest): void {
    this.pool.dispatch({ method: 'POST', path: request.path, headers: request.headers, body: request.body, idempotent: false }, this);
  }

  /** Stops the request (client gone, timeout): the engine sees its connection close. */
  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.abortRequest?.(CANCELLED);
  }

  /** Lets a paused answer flow again. */
  resume(): void {
    this.resumeSocket?.();
  }

  // ---------------------------------------------------------------- undici's handler interface

  onConnect(abort: (err?: Error) => void): void {
    if (this.cancelled) abort(CANCELLED);
    else this.abortRequest = abort;
  }

  onHeaders(status: number, raw: Buffer[], resume: () => void): boolean {
    if (this.cancelled) return false;
    if (status < 200) return true; // 1xx: the real answer follows
    this.responded = true;
    this.resumeSocket = resume;
    this.handler.onResponse(status, headersOf(raw));
    return !this.cancelled;
  }

  onData(chunk: Buffer): boolean {
    if (this.cancelled) return false;
    return this.handler.onData(chunk);
  }

  onComplete(): void {
    if (!this.cancelled) this.handler.onEnd();
  }

  onError(err: Error): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.handler.onError(this.classify(err as NodeJS.ErrnoException));
  }

  private classify(err: NodeJS.ErrnoException): UpstreamError {
    const code = err.code;
    if (this.responded) return new UpstreamError(err.message, 'broken', code);
    if (code === 'UND_ERR_CONNECT_TIMEOUT') {
      return new UpstreamError(`no connection within ${this.connectTimeoutMs / 1000} s (CONNECT_TIMEOUT_S)`, 'connect', code);
    }
    if (code !== undefined && CONNECT_CODES.has(code)) return new UpstreamError(err.message, 'connect', code);
    return new UpstreamError(err.message, 'reset', code);
  }
}

/** Hop-by-hop headers a proxy must not pass on (RFC 9110 §7.6.1); dropped as the answer arrives. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-authenticate']);

/**
 * undici's raw `[name, value, …]` buffers as a header object with lowercased names, less the
 * hop-by-hop ones (built without them rather than deleting later: deletes slow objects down).
 */
function headersOf(raw: Buffer[]): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i].toString('latin1').toLowerCase();
    if (HOP_BY_HOP.has(name)) continue;
    const value = raw[i + 1].toString('latin1');
    const seen = headers[name];
    if (seen === undefined) headers[name] = value;
    else if (Array.isArray(seen)) seen.push(value);
    else headers[name] = [seen, value];
  }
  return headers;
}
