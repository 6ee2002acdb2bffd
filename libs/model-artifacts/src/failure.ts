/** Why a resolution failed: a machine-readable reason and a sentence an operator can act on. */

export const FAILURE_REASONS = ['RevisionNotFound', 'AccessDenied', 'SourceUnavailable', 'DigestMismatch', 'EmptyManifest', 'SecretNotFound', 'InvalidToken'] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

/** Reasons a later attempt can cure without anyone changing the spec or the source. */
const RETRYABLE: ReadonlySet<FailureReason> = new Set(['SourceUnavailable']);

export class ResolutionError extends Error {
  readonly retryable: boolean;

  constructor(
    readonly reason: FailureReason,
    /** The sentence, without the reason prefix. */
    readonly detail: string,
  ) {
    super(`${reason}: ${detail}`);
    this.name = 'ResolutionError';
    this.retryable = RETRYABLE.has(reason);
  }
}
