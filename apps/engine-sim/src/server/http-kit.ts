/** Small helpers over Node's http module for the engine's hot path (no framework in between). */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError, errorBody, payloadTooLarge, type ErrorFormat } from '@gpufleet/openai-protocol';

/** Bytes a request body may have. */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;

/** Response headers every answer carries: the replica's name, and `connection: close` while draining. */
export interface ResponseDecor {
  readonly replica: string;
  readonly draining: boolean;
  readonly requestId?: string;
}

export function baseHeaders(decor: ResponseDecor, contentType: string, length?: number): Record<string, string | number> {
  const headers: Record<string, string | number> = { 'content-type': contentType, 'x-gpufleet-replica': decor.replica };
  if (length !== undefined) headers['content-length'] = length;
  if (decor.requestId) headers['x-request-id'] = decor.requestId;
  if (decor.draining) headers.connection = 'close';
  return headers;
}

export function sendJson(res: ServerResponse, decor: ResponseDecor, status: number, body: unknown, extra?: Record<string, string>): void {
  const text = JSON.stringify(body);
  const headers = baseHeaders(decor, 'application/json', Buffer.byteLength(text));
  if (extra) Object.assign(headers, extra);
  res.writeHead(status, headers);
  res.end(text);
}

export function sendText(res: ServerResponse, decor: ResponseDecor, status: number, text: string, contentType = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, baseHeaders(decor, contentType, Buffer.byteLength(text)));
  res.end(text);
}

export function sendError(res: ServerResponse, decor: ResponseDecor, error: ApiError, format: ErrorFormat, extra?: Record<string, string>): void {
  if (res.headersSent) {
    // Mid-stream: vLLM reports the error as one more event, then ends the stream.
    if (!res.writableEnded) res.end(`data: ${JSON.stringify(errorBody(error, format))}\n\ndata: [DONE]\n\n`);
    return;
  }
  sendJson(res, decor, error.status, errorBody(error, format), extra);
}

/**
 * Reads the whole body as UTF-8 text and calls `done(null, text)`; past `limit` bytes it calls
 * `done(413 ApiError)` once and stops reading (the answer closes the connection).
 */
export function readBody(req: IncomingMessage, done: (error: Error | null, text: string) => void, limit: number = MAX_BODY_BYTES): void {
  let first: Buffer | undefined;
  let chunks: Buffer[] | undefined;
  let size = 0;
  let failed = false;
  req.on('data', (chunk: Buffer) => {
    if (failed) return;
    size += chunk.length;
    if (size > limit) {
      failed = true;
      req.pause();
      done(payloadTooLarge(limit), '');
      return;
    }
    if (!first) first = chunk;
    else (chunks ??= [first]).push(chunk);
  });
  req.on('end', () => {
    if (failed) return;
    done(null, chunks ? Buffer.concat(chunks).toString('utf8') : first ? first.toString('utf8') : '');
  });
  req.on('error', (err) => {
    if (failed) return;
    failed = true;
    done(err, '');
  });
}
