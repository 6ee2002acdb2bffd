import { CredentialFormat } from './credential';

/**
 * Access tokens of gpufleet's gRPC APIs look like `gfat_<id>_<secret>` (gpufleet access token):
 * a different prefix from the router's `gpufleet_` API keys, so neither is mistaken for the
 * other and a leaked token is recognizable by secret scanners.
 */
export const ACCESS_TOKEN_PREFIX = 'gfat_';
export const ACCESS_TOKENS = new CredentialFormat(ACCESS_TOKEN_PREFIX, 'access token', 'tokens');

/** The principal of GPUFLEET_ADMIN_TOKEN, the break-glass admin every stack starts with. */
export const BOOTSTRAP_ADMIN = 'system:admin';

/** Names of users and service accounts: 1-63 of a-z 0-9 . _ -, letters or digits at both ends, no ".." (they are NATS KV keys; ':' is kept for system principals). */
export const PRINCIPAL_NAME = /^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$/;
/** A namespace as workloads name it (DNS-1123 label). */
export const NAMESPACE_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
export const MAX_DESCRIPTION = 256;
/** The longest expires_in_seconds accepted: ten years. */
export const MAX_TOKEN_LIFETIME_S = 10 * 365 * 24 * 3600;
