/** gRPC status names, so the node runtime maps them one to one. */
export type ProcessRuntimeErrorCode =
  | 'INVALID_ARGUMENT'
  | 'FAILED_PRECONDITION'
  | 'ALREADY_EXISTS'
  | 'NOT_FOUND'
  | 'UNAVAILABLE'
  | 'DEADLINE_EXCEEDED'
  | 'DATA_LOSS';

/** A refused or failed runtime operation: a machine-readable code and a sentence a user can act on. */
export class ProcessRuntimeError extends Error {
  override readonly name = 'ProcessRuntimeError';

  constructor(
    readonly code: ProcessRuntimeErrorCode,
    sentence: string,
  ) {
    super(`${code}: ${sentence}`);
  }
}
