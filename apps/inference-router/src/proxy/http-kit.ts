/** Small helpers over Node's http module for the router's hot path (no framework in between). */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { ApiError, errorBody, payloadTooLarge } from '@gpufleet/openai-protocol';
import type { AttemptOutcome } from '@gpufleet/routing-core';
import type { AttemptResult } from '../metrics/router-metrics';

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

// ---------------------------------------------------------------- attempts on engines

/** What passive health makes of an attempt's result. */
export function attemptOutcome(result: AttemptResult): AttemptOutcome {
  switch (result) {
    case 'ok':
      return 'ok';
    case 'connect_error':
      return 'connect_error';
    case 'cancelled':
      return 'cancelled';
    default:
      return 'server_error';
  }
}

/** The message of an engine's error body, whatever its shape, or its first characters. */
export function engineMessage(body: string): string {
  try {
    const json = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown; detail?: unknown };
    const message = typeof json.error === 'object' ? json.error?.message : (json.error ?? json.message ?? json.detail);
    if (typeof message === 'string' && message) return message;
  } catch {
    // not JSON
  }
  const text = body.trim().replace(/\s+/g, ' ');
  return text.length > 200 ? `${text.slice(0, 200)}…` : text || '(empty body)';
}
