/** Small helpers over Node's http module for the router's hot path (no framework in between). */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { ApiError, errorBody, payloadTooLarge } from '@gpufleet/openai-protocol';

/** Bytes a request body may have. */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;

export function sendJson(res: ServerResponse, status: number, body: unknown, extra?: OutgoingHttpHeaders): void {
  const text = JSON.stringify(body);
  const headers: OutgoingHttpHeaders = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) };
  if (extra) Object.assign(headers, extra);
  res.writeHead(status, headers);
  res.end(text);
}

/** An OpenAI-style error body, or, when a stream has started, one more event with the error and `[DONE]`. */
export function sendError(res: ServerResponse, error: ApiError, extra?: OutgoingHttpHeaders): void {
  if (res.headersSent) {
    if (!res.writableEnded) res.end(streamErrorEvent(error));
    return;
  }
  sendJson(res, error.status, errorBody(error, 'openai'), extra);
}

export function streamErrorEvent(error: ApiError): string {
  return `data: ${JSON.stringify(errorBody(error, 'openai'))}\n\ndata: [DONE]\n\n`;
}

/**
 * Reads the whole body and calls `done(null, body)`; past `limit` bytes it calls
 * `done(413 ApiError)` once and stops reading (the answer closes the connection).
 */
export function readBody(req: IncomingMessage, done: (error: Error | null, body: Buffer) => void, limit: number = MAX_BODY_BYTES): void {
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
      done(payloadTooLarge(limit), EMPTY);
      return;
    }
    if (!first) first = chunk;
    else (chunks ??= [first]).push(chunk);
  });
  req.on('end', () => {
    if (failed) return;
    done(null, chunks ? Buffer.concat(chunks, size) : (first ?? EMPTY));
  });
  req.on('error', (err) => {
    if (failed) return;
    failed = true;
    done(err, EMPTY);
  });
}

const EMPTY = Buffer.alloc(0);

/** Hop-by-hop headers a proxy must not pass on (RFC 9110 §7.6.1). */
export const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-authenticate'] as const;

// ---------------------------------------------------------------- errors the router adds

export function forbiddenModel(message: string): ApiError {
  return new ApiError(403, 'permission_error', `${message}.`, 'model', 'model_not_allowed');
}

export function upstreamFailed(message: string): ApiError {
  return new ApiError(502, 'server_error', message, null, 'upstream_error');
}

export function gatewayTimeout(message: string): ApiError {
  return new ApiError(504, 'server_error', message, null, 'timeout');
}
