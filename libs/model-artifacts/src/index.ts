export * from './spec';
export * from './manifest';
export { globToRegExp, isSelected, matchesAny } from './patterns';
export { FAILURE_REASONS, ResolutionError, type FailureReason } from './failure';
export type { FetchFn, HttpLimits } from './http';
export {
  DEFAULT_LIMITS,
  downloadRequest,
  type ArtifactResolution,
  type DownloadLocation,
  type ResolvedFile,
  type ResolveLimits,
  type ResolveOutcome,
  type SecretLookup,
} from './resolution';
export { resolveArtifact, describeSource, type ResolverOptions } from './resolver';
