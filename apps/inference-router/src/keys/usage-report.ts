/**
 * KeyService's GetUsage: the per-day usage hashes the meters of every router replica add to in
 * Redis (`RedisKeys.usageDay`, fields `<counter>|<deployment>|<model>`, see
 * metering/usage-meter.ts), read back as rows.
 */
import type Redis from 'ioredis';
import { parseUsageDayKey, RedisKeys, type GetUsageRequest, type UsageRow } from '@gpufleet/contracts';
import { invalidArgument, unavailable } from '@gpufleet/grpc-kit';
import { API_KEY_ID_LENGTH } from '@gpufleet/routing-core';
import { USAGE_COUNTERS, type UsageCounter } from '../metering/usage-meter';
import { ANONYMOUS } from './key-registry';

const DAY_MS = 86_400_000;
const KEY_ID = new RegExp(`^[a-z0-9]{${API_KEY_ID_LENGTH}}$`);
const MAX_MODEL_NAME = 256;
/** SCAN's COUNT hint, and hashes read per pipeline. */
const SCAN_COUNT = 1000;
const HGETALL_BATCH = 500;

export interface UsageQuery {
  /** Undefined: every key. */
  readonly keyId: string | undefined;
  /** UTC days, today included. */
  readonly days: number;
  /** Undefined: every model. */
  readonly model: string | undefined;
}

/** A GetUsage request checked against this router's retention; errors name the field. */
export function usageQuery(request: GetUsageRequest, retentionDays: number): UsageQuery {
  const keyId = request.keyId === '' ? undefined : request.keyId;
  if (keyId !== undefined && keyId !== ANONYMOUS.keyId && !KEY_ID.test(keyId)) {
    throw invalidArgument('key_id', `a key id of ${API_KEY_ID_LENGTH} lower-case letters and digits, "${ANONYMOUS.keyId}", or empty for every key`, keyId);
  }
  const days = request.days === 0 ? 1 : request.days;
  if (days > retentionDays) throw invalidArgument('days', `1 to ${retentionDays} (this router keeps daily usage USAGE_RETENTION_DAYS=${retentionDays} days)`, days);
  const model = request.model === '' ? undefined : request.model;
  if (model !== undefined && model.length > MAX_MODEL_NAME) throw invalidArgument('model', `a served model name of at most ${MAX_MODEL_NAME} characters`, `${model.length} characters`);
  return { keyId, days, model };
}

/** `YYYY-MM-DD` (UTC) of today and the `days - 1` days before it, newest first. */
export function utcDays(now: Date, days: number): string[] {
  const today = now.getTime() - (now.getTime() % DAY_MS);
  return Array.from({ length: days }, (_, i) => new Date(today - i * DAY_MS).toISOString().slice(0, 10));
}

/** A Redis glob pattern matching `text` literally. */
function globLiteral(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}

type CountField = 'requests' | 'promptTokens' | 'cachedTokens' | 'completionTokens' | 'estimatedRequests';

const COUNTER_FIELDS: Readonly<Record<UsageCounter, CountField>> = {
  requests: 'requests',
  prompt_tokens: 'promptTokens',
  cached_tokens: 'cachedTokens',
  completion_tokens: 'completionTokens',
  estimated_requests: 'estimatedRequests',
};

function isCounter(value: string): value is UsageCounter {
  return (USAGE_COUNTERS as readonly string[]).includes(value);
}

export class UsageReport {
  constructor(
    private readonly redis: Redis,
    private readonly cluster: string,
  ) {}

  /** Rows of the days and keys asked for, oldest day first, then by key, deployment and model. */
  async rows(query: UsageQuery, now: Date): Promise<UsageRow[]> {
    const days = utcDays(now, query.days);
    try {
      const hashes = query.keyId === undefined ? await this.scanDays(new Set(days)) : days.map((day) => ({ day, keyId: query.keyId as string, key: RedisKeys.usageDay(this.cluster, day, query.keyId as string) }));
      const rows = new Map<string, UsageRow>();
      for (let i = 0; i < hashes.length; i += HGETALL_BATCH) {
        const batch = hashes.slice(i, i + HGETALL_BATCH);
        const pipeline = this.redis.pipeline();
        for (const h of batch) pipeline.hgetall(h.key);
        const results = (await pipeline.exec()) ?? [];
        results.forEach(([err, fields], j) => {
          if (err) throw err;
          this.addFields(rows, batch[j].day, batch[j].keyId, fields as Record<string, string>, query.model);
        });
      }
      return [...rows.values()].sort(
        (a, b) => a.day.localeCompare(b.day) || a.keyId.localeCompare(b.keyId) || a.deployment.localeCompare(b.deployment) || a.model.localeCompare(b.model),
      );
    } catch (err) {
      throw unavailable(`usage counters could not be read from Redis: ${(err as Error).message}`);
    }
  }

  /** Every key's day hash of `days`, by SCAN (never KEYS: it would block Redis on a large keyspace). */
  private async scanDays(days: ReadonlySet<string>): Promise<Array<{ day: string; keyId: string; key: string }>> {
    const pattern = `${globLiteral(RedisKeys.usageDayPrefix(this.cluster))}*`;
    const found = new Map<string, { day: string; keyId: string; key: string }>();
    let cursor = '0';
    do {
      const [next, keys] = await this.redis.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
      cursor = next;
      for (const key of keys) {
        const parsed = parseUsageDayKey(this.cluster, key);
        if (parsed === undefined || !days.has(parsed.day)) continue;
        found.set(key, { ...parsed, key }); // SCAN may return a key twice
      }
    } while (cursor !== '0');
    return [...found.values()];
  }

  /** Adds the fields `<counter>|<deployment>|<model>` of one day hash to `rows`. */
  private addFields(rows: Map<string, UsageRow>, day: string, keyId: string, fields: Record<string, string>, model: string | undefined): void {
    for (const [field, value] of Object.entries(fields)) {
      const first = field.indexOf('|');
      const second = field.indexOf('|', first + 1);
      if (first < 0 || second < 0) continue;
      const counter = field.slice(0, first);
      const rowModel = field.slice(second + 1); // a model name may itself hold "|"
      if (!isCounter(counter) || (model !== undefined && rowModel !== model)) continue;
      const deployment = field.slice(first + 1, second);
      const id = `${day}\n${keyId}\n${deployment}\n${rowModel}`;
      let row = rows.get(id);
      if (row === undefined) {
        row = { day, keyId, deployment, model: rowModel, requests: 0, promptTokens: 0, cachedTokens: 0, completionTokens: 0, estimatedRequests: 0 };
        rows.set(id, row);
      }
      row[COUNTER_FIELDS[counter]] += Number(value) || 0;
    }
  }
}
