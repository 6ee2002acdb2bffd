/** Why a delivery failed; machine-readable, carried to the artifact's per-node status. */
export type DeliveryFailureReason =
  | 'InvalidManifest'
  | 'InsufficientCapacity'
  | 'DigestMismatch'
  | 'SourceUnavailable'
  | 'Stalled'
  | 'Aborted'
  | 'CacheIOError';

export class DeliveryError extends Error {
  constructor(readonly reason: DeliveryFailureReason, message: string) {
    super(`${reason}: ${message}`);
  }
}

/** A failure of one request to one source; the chunk is retried elsewhere or after a backoff. */
export class SourceError extends Error {
  constructor(readonly kind: 'Unavailable' | 'Stalled' | 'NotFound' | 'BadResponse', message: string) {
    super(message);
  }
}
