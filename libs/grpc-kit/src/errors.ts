import { Metadata, status, StatusObject } from '@grpc/grpc-js';

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
    super(`${reason}: ${sentence}`);
    this.details = this.message;
    this.metadata = new Metadata();
    this.metadata.set('gpufleet-reason', reason);
    if (field) this.metadata.set('gpufleet-field', field);
  }
}

export function invalidArgument(field: string, expected: string, got?: unknown): GrpcError {
  const shown = got === undefined ? '' : `, got ${JSON.stringify(got)}`;
  return new GrpcError(status.INVALID_ARGUMENT, 'INVALID_ARGUMENT', `${field}: expected ${expected}${shown}`, field);
}

export function notFound(kind: string, name: string, hint?: string): GrpcError {
  return new GrpcError(status.NOT_FOUND, 'NOT_FOUND', `${kind} "${name}" does not exist${hint ? ` (${hint})` : ''}`);
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
