import { Metadata, status, StatusObject } from '@grpc/grpc-js';

/**
 * Characters of a status message at most. grpc-js sends it in a trailer: one of about 100 KB
 * (a request's oversized field echoed back) loses the call and leaves the connection hung.
 */
export const MAX_STATUS_MESSAGE = 4096;

function bounded(message: string): string {
  return message.length <= MAX_STATUS_MESSAGE ? message : `${message.slice(0, MAX_STATUS_MESSAGE - 40)}… (${message.length} characters in all)`;
}

/**
 * A metadata value grpc-js accepts: printable ASCII only (it throws on anything else, which
 * turned a refusal naming `labels["\n"]` into INTERNAL), others as \u{…}, at most 256 characters.
 * A space at either end is escaped too: HTTP/2 drops a header value with outer whitespace, so a
 * refusal naming the label key " " reached the client without its field.
 */
export function asciiMetadata(value: string): string {
  const escape = (c: string) => `\\u{${(c.codePointAt(0) ?? 0).toString(16)}}`;
  const escaped = value.replace(/[^\x20-\x7e]/gu, escape).replace(/^ +| +$/gu, (spaces) => [...spaces].map(escape).join(''));
  return escaped.length <= 256 ? escaped : `${escaped.slice(0, 253)}...`;
}

/** A value as an error shows it: JSON, a long one cut to its start and its length. */
export function shownValue(value: unknown): string {
  if (typeof value === 'string' && value.length > 100) return `${JSON.stringify(value.slice(0, 64))}… (${value.length} characters)`;
  return JSON.stringify(value);
}

/**
 * An error that crosses the gRPC boundary: a status code, a machine-readable reason and a
 * sentence a user can act on (CONVENTIONS "Errors"). The message reads `REASON: sentence`.
 */
export class GrpcError extends Error implements Partial<StatusObject> {
  readonly metadata: Metadata;
  /** What grpc-js sends as the status message: `REASON: sentence`. */
  readonly details: string;

  constructor(
    readonly code: status,
    readonly reason: string,
    sentence: string,
    readonly field?: string,
  ) {
    super(bounded(`${reason}: ${sentence}`));
    this.details = this.message;
    this.metadata = new Metadata();
    this.metadata.set('gpufleet-reason', reason);
    if (field) this.metadata.set('gpufleet-field', asciiMetadata(field));
  }
}

export function invalidArgument(field: string, expected: string, got?: unknown): GrpcError {
  const shown = got === undefined ? '' : `, got ${shownValue(got)}`;
  return new GrpcError(status.INVALID_ARGUMENT, 'INVALID_ARGUMENT', `${field}: expected ${expected}${shown}`, field);
}

export function notFound(kind: string, name: string, hint?: string): GrpcError {
  const shownName = name.length > 100 ? `${name.slice(0, 64)}… (${name.length} characters)` : name;
  return new GrpcError(status.NOT_FOUND, 'NOT_FOUND', `${kind} "${shownName}" does not exist${hint ? ` (${hint})` : ''}`);
}

export function unauthenticated(why: string): GrpcError {
  return new GrpcError(status.UNAUTHENTICATED, 'UNAUTHENTICATED', why);
}

export function unavailable(why: string): GrpcError {
  return new GrpcError(status.UNAVAILABLE, 'UNAVAILABLE', why);
}

/** Any thrown value as a gRPC status; unexpected errors become INTERNAL without leaking stacks. */
export function toServiceError(err: unknown): Partial<StatusObject> & Error {
  if (err instanceof GrpcError) return err;
  const e = new GrpcError(status.INTERNAL, 'INTERNAL', (err as Error)?.message ?? String(err));
  return e;
}
