/**
 * Every API key in memory, fed by a watch on the api-keys bucket: each router replica checks keys
 * without a network call, and a revocation (a put with `revoked: true`) or a deletion reaches
 * all of them within milliseconds.
 */
import type { ApiKeyRecord } from '@gpufleet/contracts';
import type { KvChange } from '@gpufleet/messaging';
import { ApiError, unauthorized } from '@gpufleet/openai-protocol';
import { API_KEY_PREFIX, ApiKeyFormatError, parseApiKey, verifyKey, type ApiKeyRecord as KeyView } from '@gpufleet/routing-core';
import { keyView } from './key-records';

/** Who a request runs as. */
export interface Principal {
  /** The key id, or `anonymous`. */
  readonly keyId: string;
  /** Undefined for anonymous requests (AUTH_REQUIRED=false, no gpufleet key sent). */
  readonly key: KeyView | undefined;
}

export const ANONYMOUS: Principal = Object.freeze({ keyId: 'anonymous', key: undefined });

const BEARER = 'Bearer ';

export class KeyRegistry {
  private readonly keys = new Map<string, KeyView>();
  /** Revision of each key's entry, so a change applied early (by KeyService) is not undone by an older one. */
  private readonly revisions = new Map<string, number>();

  constructor(private readonly authRequired: boolean) {}

  get size(): number {
    return this.keys.size;
  }

  /** Applies one change of the api-keys bucket. */
  apply(change: KvChange<ApiKeyRecord>): void {
    if ((this.revisions.get(change.key) ?? 0) >= change.revision) return;
    this.revisions.set(change.key, change.revision);
    if (change.kind === 'delete') {
      this.keys.delete(change.key);
      return;
    }
    const view = keyView(change.value);
    // A record stored under another id than its own is not trusted.
    if (view.id !== change.key) this.keys.delete(change.key);
    else this.keys.set(view.id, view);
  }

  get(id: string): KeyView | undefined {
    return this.keys.get(id);
  }

  /**
   * The principal of an `Authorization` header value, or the 401 to answer. With auth not
   * required, a request without a gpufleet key (none, or e.g. vLLM's customary "EMPTY") runs
   * as anonymous; a gpufleet key that is sent is still checked.
   */
  authenticate(header: string | undefined): Principal | ApiError {
    const token = header !== undefined && header.startsWith(BEARER) ? header.slice(BEARER.length).trim() : undefined;
    if (token === undefined || token === '' || !token.startsWith(API_KEY_PREFIX)) {
      if (!this.authRequired) return ANONYMOUS;
      if (header === undefined || header === '') return unauthorized('Missing API key: send "Authorization: Bearer gpufleet_<id>_<secret>".');
      return unauthorized('Invalid API key: expected "Authorization: Bearer gpufleet_<id>_<secret>".');
    }
    let id: string;
    try {
      id = parseApiKey(token).id;
    } catch (err) {
      if (err instanceof ApiKeyFormatError) return unauthorized(`Invalid API key: ${err.message.replace(/^UNAUTHENTICATED: /, '')}.`);
      throw err;
    }
    const key = this.keys.get(id);
    if (key === undefined || !verifyKey(token, key.hash)) return unauthorized(`Invalid API key ${id}: no such key, or the secret does not match.`);
    if (key.revoked) return unauthorized(`API key ${id} has been revoked; ask for a new one.`);
    if (key.expiresAt !== undefined && Date.now() >= key.expiresAt) {
      return unauthorized(`API key ${id} expired at ${new Date(key.expiresAt).toISOString()}; ask for a new one.`);
    }
    return { keyId: id, key };
  }
}
