/** Per-key limits; absent means unlimited. Counted per key and model (see rate-limit). */
export interface ApiKeyLimits {
  readonly requestsPerMinute?: number;
  readonly tokensPerMinute?: number;
}

/** An API key as stored (the secret only hashed). */
export interface ApiKeyRecord {
  readonly id: string;
  /** hashSecret(secret). */
  readonly hash: string;
  /** Models the key may call: `*` for all, or exact names. */
  readonly models: '*' | readonly string[];
  /** Ms since the epoch; the key stops working at this instant. */
  readonly expiresAt?: number;
  readonly revoked: boolean;
  readonly limits?: ApiKeyLimits;
}

export type AuthorizationDenial = 'revoked' | 'expired' | 'forbidden_model';

export type Authorization =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: AuthorizationDenial; readonly message: string };

const ALLOWED: Authorization = Object.freeze({ ok: true });

/**
 * Whether the key may call `model` at `now` (ms since the epoch). Checked in the order a user
 * can act on: a revoked key needs replacing whatever else is true of it.
 */
export function authorize(record: ApiKeyRecord, model: string, now: number): Authorization {
  if (record.revoked) return deny('revoked', `API key ${record.id} has been revoked`);
  if (record.expiresAt !== undefined && now >= record.expiresAt) {
    return deny('expired', `API key ${record.id} expired at ${new Date(record.expiresAt).toISOString()}`);
  }
  if (record.models !== '*' && !record.models.includes(model)) {
    return deny('forbidden_model', `API key ${record.id} may not use model ${JSON.stringify(model)}${allowedList(record.models)}`);
  }
  return ALLOWED;
}

function deny(reason: AuthorizationDenial, message: string): Authorization {
  return { ok: false, reason, message };
}

function allowedList(models: readonly string[]): string {
  if (models.length === 0) return ' (it may use no model)';
  const shownModels = models.slice(0, 5).map((m) => JSON.stringify(m)).join(', ');
  return ` (it may use ${shownModels}${models.length > 5 ? ` and ${models.length - 5} more` : ''})`;
}
