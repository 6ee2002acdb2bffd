import { CreateKeyRequest, GetUsageRequest } from '@gpufleet/contracts';
import { API_KEY_ID_LENGTH, API_KEY_PREFIX } from '@gpufleet/routing-core';
import { checkRange } from '../flags';

/** Requests without a key run as this key id when the router does not require keys. */
export const ANONYMOUS_KEY_ID = 'anonymous';

const KEY_ID = new RegExp(`^[a-z0-9]{${API_KEY_ID_LENGTH}}$`);
const FULL_KEY = new RegExp(`^${API_KEY_PREFIX}([a-z0-9]{${API_KEY_ID_LENGTH}})_`);
const UINT32_MAX = 4_294_967_295;
/** The longest `--expires` duration: 100 years. */
const MAX_EXPIRES_S = 100 * 365 * 86_400;
const UNIT_S: Record<string, number> = { s: 1, m: 60, h: 3_600, d: 86_400, w: 604_800 };
const DURATION = /^(\d+)([smhdw])$/;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** The flags of `gpufleet keys create`, as commander hands them over. */
export interface KeyCreateFlags {
  name?: string;
  models?: string;
  expires?: string;
  rpm?: number;
  tpm?: number;
}

/** The flags of `gpufleet usage`. */
export interface UsageFlags {
  key?: string;
  days?: number;
  model?: string;
}

/** `--models a,b` or `--models all` (the default): the key's scope. */
export function parseModels(value: string | undefined): { allModels: boolean; models: string[] } {
  if (value === undefined || value.trim() === 'all') return { allModels: true, models: [] };
  const models = value.split(',').map((m) => m.trim());
  if (models.some((m) => m === '')) throw new Error(`--models ${JSON.stringify(value)}: expected served model names separated by commas (e.g. llama-3.1-8b,qwen2.5-7b), or all`);
  if (models.includes('all')) throw new Error(`--models ${value}: "all" stands alone (every model); leave it out to list model names`);
  return { allModels: false, models: [...new Set(models)] };
}

/**
 * `--expires 30d` (a duration: s, m, h, d or w) or `--expires 2027-01-31` / `2027-01-31T12:00:00Z`
 * (an ISO date, UTC unless it has an offset): when the key stops working.
 */
export function parseExpires(value: string | undefined, now: Date): Pick<CreateKeyRequest, 'expiresAt' | 'expiresInSeconds'> {
  if (value === undefined) return { expiresAt: undefined, expiresInSeconds: 0 };
  const text = value.trim();
  const duration = DURATION.exec(text);
  if (duration) {
    const seconds = Number(duration[1]) * UNIT_S[duration[2]];
    if (seconds <= 0 || seconds > MAX_EXPIRES_S) throw new Error(`--expires ${value}: expected a duration from 1s to 36500d`);
    return { expiresAt: undefined, expiresInSeconds: seconds };
  }
  if (ISO_DATE.test(text)) {
    // A date and time without an offset is read as UTC, like a bare date.
    const iso = text.replace(' ', 'T');
    const at = new Date(/T/.test(iso) && !/(Z|[+-]\d{2}:?\d{2})$/.test(iso) ? `${iso}Z` : iso);
    const [y, m, d] = text.slice(0, 10).split('-').map(Number);
    const calendar = new Date(Date.UTC(y, m - 1, d)); // Date rolls 2027-02-30 over into March
    if (Number.isNaN(at.getTime()) || calendar.getUTCMonth() !== m - 1 || calendar.getUTCDate() !== d) throw new Error(`--expires ${value}: not a valid date`);
    if (at.getTime() <= now.getTime()) throw new Error(`--expires ${value}: expected a time in the future (now is ${now.toISOString()})`);
    return { expiresAt: at, expiresInSeconds: 0 };
  }
  throw new Error(`--expires ${value}: expected a duration such as 30d, 12h, 90m or 3600s, or an ISO date such as 2027-01-31 or 2027-01-31T12:00:00Z`);
}

/** The CreateKey request of `gpufleet keys create`. */
export function createKeyRequestFromFlags(flags: KeyCreateFlags, now: Date): CreateKeyRequest {
  const rpm = checkRange(flags.rpm ?? 0, 0, UINT32_MAX, '--rpm');
  const tpm = checkRange(flags.tpm ?? 0, 0, Number.MAX_SAFE_INTEGER, '--tpm');
  return {
    name: flags.name ?? '',
    ...parseModels(flags.models),
    ...parseExpires(flags.expires, now),
    limits: rpm > 0 || tpm > 0 ? { requestsPerMinute: rpm, tokensPerMinute: tpm } : undefined,
    labels: {},
  };
}

/** A key id as `keys revoke` and `usage --key` take it; errors say what was wrong. */
export function checkKeyId(value: string, what: string, allowAnonymous = false): string {
  if (KEY_ID.test(value) || (allowAnonymous && value === ANONYMOUS_KEY_ID)) return value;
  const full = FULL_KEY.exec(value);
  if (full) throw new Error(`${what}: that is a whole API key; pass only its id, ${full[1]} (and keep the secret out of your shell history)`);
  const anonymous = allowAnonymous ? `, or ${ANONYMOUS_KEY_ID}` : '';
  throw new Error(`${what} ${JSON.stringify(value)}: expected a key id of ${API_KEY_ID_LENGTH} lower-case letters and digits${anonymous} (the part after ${API_KEY_PREFIX}; list them with \`gpufleet keys list\`)`);
}

/** The GetUsage request of `gpufleet usage`. */
export function usageRequestFromFlags(flags: UsageFlags): GetUsageRequest {
  const days = flags.days ?? 1;
  if (days < 1) throw new Error(`--days ${days}: expected at least 1 (1 is today, UTC)`);
  if (flags.model !== undefined && flags.model.trim() === '') throw new Error('--model: expected a served model name, e.g. llama-3.1-8b');
  return {
    keyId: flags.key === undefined ? '' : checkKeyId(flags.key, '--key', true),
    days,
    model: flags.model?.trim() ?? '',
  };
}

/** Request fields of KeyService and the flags that set them, for errors the router reports. */
export const KEY_FIELD_FLAGS: Readonly<Record<string, string>> = {
  name: '--name',
  models: '--models',
  all_models: '--models',
  expires_at: '--expires',
  expires_in_seconds: '--expires',
  key_id: '--key',
  days: '--days',
  model: '--model',
};
