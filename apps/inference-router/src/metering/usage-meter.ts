/**
 * Metering: every proxied request's tokens are added up in memory per (key, model, deployment)
 * and, once per USAGE_FLUSH_S, written to Redis hash counters, published as one NATS usage
 * event and added to the Prometheus counters. The request path only appends to memory.
 *
 * Redis layout (`RedisKeys` of @gpufleet/contracts, `<prefix>` = `gpufleet:<cluster>:usage`):
 *   <prefix>:total:<key id>              hash, all time
 *   <prefix>:day:<YYYY-MM-DD>:<key id>   hash, one UTC day, expires after USAGE_RETENTION_DAYS
 * with fields `<counter>|<deployment>|<model>`, counter one of requests, prompt_tokens,
 * cached_tokens, completion_tokens, estimated_requests. A failed write is kept and retried with
 * the next flush, so a Redis restart loses nothing this replica metered.
 */
import type Redis from 'ioredis';
import { Events, RedisKeys, type UsageRecord } from '@gpufleet/contracts';
import type { EventBus } from '@gpufleet/messaging';
import type { Logger } from '@gpufleet/observability';
import type { RouterMetrics } from '../metrics/router-metrics';

export const USAGE_COUNTERS = ['requests', 'prompt_tokens', 'cached_tokens', 'completion_tokens', 'estimated_requests'] as const;
export type UsageCounter = (typeof USAGE_COUNTERS)[number];
type Counter = UsageCounter;

/** Records per usage event; more are split into several events. */
const RECORDS_PER_EVENT = 500;
/** Records held for NATS while it is unreachable; older ones are dropped first (Redis keeps the totals). */
const MAX_PENDING_RECORDS = 100_000;

interface Tally {
  readonly keyId: string;
  readonly model: string;
  readonly deployment: string;
  readonly day: string;
  readonly counts: Record<Counter, number>;
}

export interface UsageMeterOptions {
  readonly redis: Redis;
  readonly events: EventBus | undefined;
  readonly metrics: RouterMetrics;
  readonly logger: Logger;
  readonly cluster: string;
  readonly router: string;
  readonly flushMs: number;
  readonly retentionDays: number;
}

const DAY_MS = 86_400_000;
let dayStart = 0;
let dayName = '';

/** `YYYY-MM-DD` (UTC) of `ms`; the string is made once per day, not per request. */
function utcDay(ms: number): string {
  if (ms < dayStart || ms >= dayStart + DAY_MS) {
    dayStart = ms - (ms % DAY_MS);
    dayName = new Date(dayStart).toISOString().slice(0, 10);
  }
  return dayName;
}

export class UsageMeter {
  private tallies = new Map<string, Tally>();
  private records: UsageRecord[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private redisFailing = false;

  constructor(private readonly options: UsageMeterOptions) {}

  start(): void {
    this.timer ??= setInterval(() => void this.flush(), this.options.flushMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  /** Adds one finished request. Synchronous and allocation-light: the request path calls it. */
  record(record: UsageRecord): void {
    const startedMs = record.startedAt ? record.startedAt.getTime() : Date.now();
    const day = utcDay(startedMs);
    const id = `${record.keyId}\n${record.model}\n${record.deployment}\n${day}`;
    let tally = this.tallies.get(id);
    if (tally === undefined) {
      tally = {
        keyId: record.keyId,
        model: record.model,
        deployment: record.deployment,
        day,
        counts: { requests: 0, prompt_tokens: 0, cached_tokens: 0, completion_tokens: 0, estimated_requests: 0 },
      };
      this.tallies.set(id, tally);
    }
    const c = tally.counts;
    c.requests++;
    c.prompt_tokens += record.promptTokens;
    c.cached_tokens += record.cachedTokens;
    c.completion_tokens += record.completionTokens;
    if (record.estimated) c.estimated_requests++;
    this.records.push(record);
    if (this.records.length > MAX_PENDING_RECORDS) this.records.splice(0, this.records.length - MAX_PENDING_RECORDS);
  }

  /** Writes what was metered since the last flush; concurrent calls share one flush. */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing.then(() => this.flush());
    if (this.tallies.size === 0 && this.records.length === 0) return Promise.resolve();
    this.flushing = this.flushNow().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async flushNow(): Promise<void> {
    const tallies = this.tallies;
    const records = this.records;
    this.tallies = new Map();
    this.records = [];

    this.publish(records);
    if (tallies.size === 0) return;
    for (const t of tallies.values()) this.options.metrics.metered(t.keyId, t.model, t.deployment, t.counts);

    const pipeline = this.options.redis.pipeline();
    const ttl = this.options.retentionDays * 86_400;
    for (const t of tallies.values()) {
      const total = RedisKeys.usageTotal(this.options.cluster, t.keyId);
      const daily = RedisKeys.usageDay(this.options.cluster, t.day, t.keyId);
      for (const counter of USAGE_COUNTERS) {
        const n = t.counts[counter];
        if (n === 0) continue;
        const field = `${counter}|${t.deployment}|${t.model}`;
        pipeline.hincrby(total, field, n);
        pipeline.hincrby(daily, field, n);
      }
      pipeline.expire(daily, ttl);
    }
    try {
      const results = (await pipeline.exec()) ?? [];
      const failed = results.find(([err]) => err);
      if (failed) throw failed[0];
      if (this.redisFailing) this.options.logger.info('usage counters: Redis writes work again');
      this.redisFailing = false;
    } catch (err) {
      // Put the counts back: the next flush retries them together with new ones. Pipelines are
      // not transactions, so a partly applied one may count twice; Redis restarts are rarer
      // than double counts are harmful, and the usage events hold the exact records.
      for (const [id, t] of tallies) {
        const current = this.tallies.get(id);
        if (current === undefined) this.tallies.set(id, t);
        else for (const counter of USAGE_COUNTERS) current.counts[counter] += t.counts[counter];
      }
      this.options.metrics.redisError('usage');
      if (!this.redisFailing) this.options.logger.warn({ err }, `usage counters: Redis write failed, keeping ${tallies.size} tallies to retry: ${(err as Error).message}`);
      this.redisFailing = true;
    }
  }

  private publish(records: UsageRecord[]): void {
    const events = this.options.events;
    if (events === undefined || records.length === 0) return;
    for (let i = 0; i < records.length; i += RECORDS_PER_EVENT) {
      const batch = records.slice(i, i + RECORDS_PER_EVENT);
      try {
        events.publish(Events.usage, { cluster: this.options.cluster, router: this.options.router, records: batch });
        this.options.metrics.usageEventPublished(batch.length);
      } catch (err) {
        this.options.metrics.usageEventFailed(batch.length);
        this.options.logger.warn({ err }, `usage event not published (${batch.length} records): ${(err as Error).message}`);
      }
    }
  }
}
