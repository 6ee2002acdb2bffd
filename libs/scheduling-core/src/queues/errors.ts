import { describeProblems, ValidationProblem } from '../validation/problems';

/** gRPC status names, so the service maps them one to one. */
export type QueueErrorCode = 'INVALID_ARGUMENT' | 'NOT_FOUND' | 'FAILED_PRECONDITION' | 'ALREADY_EXISTS';

/** A refused queue or workload operation: a machine-readable code and a sentence a user can act on. */
export class QueueError extends Error {
  override readonly name = 'QueueError';

  constructor(
    readonly code: QueueErrorCode,
    sentence: string,
    readonly problems: readonly ValidationProblem[] = [],
  ) {
    super(`${code}: ${sentence}${problems.length > 0 ? `: ${describeProblems(problems)}` : ''}`);
  }
}
