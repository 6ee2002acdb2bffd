/**
 * The router's Prometheus series (`gpufleet_router_*`). Per-request series have few labels and
 * are series metrics (looked up once per label set, then plain additions: prom-client's own
 * validate-and-hash on every call was a visible share of the router's CPU per request);
 * token counters, which carry the key, are updated from the meter's aggregates once per flush,
 * and replica gauges (the engines' own load included) are read from the pools on scrape.
 */
import {
  createCounter,
  createGauge,
  createSeriesCounter,
  createSeriesHistogram,
  type Counter,
  type CounterSeries,
  type HistogramSeries,
  type Registry,
  type SeriesCounter,
  type SeriesHistogram,
} from '@gpufleet/observability';
import type { EngineLoad } from '@gpufleet/routing-core';
import type { EngineMetricsFailure } from '../deployments/engine-metrics-poller';
import type { ModelDirectory } from '../deployments/model-directory';

export type Api = 'chat.completions' | 'completions' | 'embeddings' | 'models';

export type AttemptResult = 'ok' | 'connect_error' | 'server_error' | 'unavailable' | 'timeout' | 'cancelled';

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

export class RouterMetrics {
  private readonly requests: SeriesCounter<'api' | 'model' | 'code'>;
  private readonly duration: SeriesHistogram<'api' | 'model'>;
  private readonly firstByte: SeriesHistogram<'api' | 'model'>;
  private readonly attempts: SeriesCounter<'result'>;
  private readonly retries: Counter<'model'>;
  private readonly rateLimited: Counter<'model' | 'limit'>;
  private readonly tokens: Counter<'key' | 'model' | 'deployment' | 'kind'>;
  private readonly meteredRequests: Counter<'key' | 'model' | 'deployment'>;
  private readonly estimated: Counter<'key' | 'model' | 'deployment'>;
  private readonly usageEvents: Counter<'result'>;
  private readonly redisErrors: Counter<'op'>;
  private readonly engineMetricsErrors: Counter<'reason'>;
  private readonly refused: Counter<'limit'>;
  // The per-request series by label values, kept here so a request pays one Map lookup. Models
  // come from deployments and codes from a short list: few entries.
  private readonly requestSeries = new Map<string, CounterSeries>();
  private readonly attemptSeries = new Map<AttemptResult, CounterSeries>();
  private readonly timingSeries = new Map<string, { duration: HistogramSeries; firstByte: HistogramSeries }>();

  constructor(registry: Registry, directory: ModelDirectory, keyCount: () => number) {
    this.requests = createSeriesCounter(registry, {
      name: 'router_requests_total',
      help: 'OpenAI API requests answered, by API, model and HTTP status.',
      labelNames: ['api', 'model', 'code'],
    });
    this.duration = createSeriesHistogram(registry, {
      name: 'router_request_duration_seconds',
      help: 'Arrival to last byte of proxied requests.',
      labelNames: ['api', 'model'],
      buckets: DURATION_BUCKETS,
    });
    this.firstByte = createSeriesHistogram(registry, {
      name: 'router_first_byte_seconds',
      help: 'Arrival to the first byte of the engine’s answer (time to first token for streams), queueing included.',
      labelNames: ['api', 'model'],
      buckets: DURATION_BUCKETS,
    });
    this.attempts = createSeriesCounter(registry, {
      name: 'router_upstream_attempts_total',
      help: 'Attempts to send a request to a replica, by result (ok, connect_error, server_error, unavailable = 503, timeout, cancelled).',
      labelNames: ['result'],
    });
    this.retries = createCounter(registry, { name: 'router_retries_total', help: 'Requests retried on another replica.', labelNames: ['model'] });
    this.rateLimited = createCounter(registry, {
      name: 'router_rate_limited_total',
      help: 'Requests refused with 429, by the limit hit (requests or tokens per minute).',
      labelNames: ['model', 'limit'],
    });
    this.tokens = createCounter(registry, {
      name: 'router_tokens_total',
      help: 'Tokens metered, by API key, model, deployment and kind (prompt, cached, completion).',
      labelNames: ['key', 'model', 'deployment', 'kind'],
    });
    this.meteredRequests = createCounter(registry, {
      name: 'router_metered_requests_total',
      help: 'Requests metered, by API key, model and deployment.',
      labelNames: ['key', 'model', 'deployment'],
    });
    this.estimated = createCounter(registry, {
      name: 'router_estimated_usage_total',
      help: 'Metered requests whose engine reported no usage, so the router estimated their tokens.',
      labelNames: ['key', 'model', 'deployment'],
    });
    this.usageEvents = createCounter(registry, {
      name: 'router_usage_records_total',
      help: 'Usage records sent in NATS usage events, by result (published, failed).',
      labelNames: ['result'],
    });
    this.redisErrors = createCounter(registry, { name: 'router_redis_errors_total', help: 'Redis commands that failed, by use.', labelNames: ['op'] });
    this.refused = createCounter(registry, {
      name: 'router_limit_refusals_total',
      help: 'What the router refused to hold, by limit: connections past MAX_CONNECTIONS, requests past MAX_IN_FLIGHT, streams cut at MAX_SSE_EVENT_KIB, engine /metrics reads cut at ENGINE_METRICS_MAX_KIB.',
      labelNames: ['limit'],
    });
    this.engineMetricsErrors = createCounter(registry, {
      name: 'router_engine_metrics_errors_total',
      help: 'Reads of an engine’s /metrics that failed, by reason (timeout, connect_error, bad_status, no_load_series, too_large).',
      labelNames: ['reason'],
    });

    createGauge(registry, {
      name: 'router_replicas_ready',
      help: 'Ready replicas per model, from the deployments store.',
      labelNames: ['model'],
      collect() {
        this.reset();
        for (const pool of directory.allPools) this.set({ model: pool.model }, pool.readyCount);
      },
    });
    createGauge(registry, {
      name: 'router_replica_in_flight',
      help: 'Requests this router has in flight per replica.',
      labelNames: ['model', 'replica'],
      collect() {
        this.reset();
        for (const pool of directory.allPools) for (const r of pool.replicas) this.set({ model: pool.model, replica: r.id }, r.inFlight);
      },
    });
    createGauge(registry, {
      name: 'router_replica_ejected',
      help: '1 while passive health keeps a replica out of rotation.',
      labelNames: ['model', 'replica'],
      collect() {
        this.reset();
        for (const pool of directory.allPools) for (const r of pool.replicas) this.set({ model: pool.model, replica: r.id }, pool.health.isEjected(r.id) ? 1 : 0);
      },
    });
    const engineGauge = (name: string, help: string, read: (load: EngineLoad) => number | undefined): void => {
      createGauge(registry, {
        name,
        help,
        labelNames: ['model', 'replica'],
        collect() {
          this.reset();
          for (const pool of directory.everyPool()) {
            for (const r of pool.replicas) {
              const value = r.engineLoad === undefined ? undefined : read(r.engineLoad);
              if (value !== undefined) this.set({ model: pool.model, replica: r.id }, value);
            }
          }
        },
      });
    };
    engineGauge('router_engine_requests_running', 'Requests running in the engine (all routers’), from its last fresh /metrics sample.', (l) => l.running);
    engineGauge('router_engine_requests_waiting', 'Requests queued in the engine (all routers’), from its last fresh /metrics sample.', (l) => l.waiting);
    engineGauge('router_engine_kv_cache_usage', 'Fraction of the engine’s KV cache in use, 0-1, from its last fresh /metrics sample.', (l) => l.kvCacheUsage);
    createGauge(registry, {
      name: 'router_queue_depth',
      help: 'Requests waiting for a replica below MAX_INFLIGHT_PER_REPLICA, per model.',
      labelNames: ['model'],
      collect() {
        this.reset();
        for (const pool of directory.allPools) this.set({ model: pool.model }, pool.queued);
      },
    });
    createGauge(registry, {
      name: 'router_api_keys',
      help: 'API keys this router replica knows (revoked ones included).',
      collect() {
        this.set(keyCount());
      },
    });
  }

  /** A connection closed at once: MAX_CONNECTIONS were open. */
  connectionDropped(): void {
    this.refused.inc({ limit: 'max_connections' });
  }

  /** A request answered 503: MAX_IN_FLIGHT were in flight. */
  overloaded(): void {
    this.refused.inc({ limit: 'max_in_flight' });
  }

  /** A read of an engine's /metrics cut: its body passed ENGINE_METRICS_MAX_KIB. */
  oversizedEngineMetrics(): void {
    this.refused.inc({ limit: 'engine_metrics_max' });
  }

  /** A stream cut: the engine sent an event bigger than MAX_SSE_EVENT_KIB. */
  oversizedEvent(): void {
    this.refused.inc({ limit: 'max_sse_event' });
  }

  request(api: Api, model: string, code: number): void {
    const id = `${api}\n${model}\n${code}`;
    let series = this.requestSeries.get(id);
    if (series === undefined) {
      series = this.requests.series({ api, model, code: String(code) });
      this.requestSeries.set(id, series);
    }
    series.inc();
  }

  proxied(api: Api, model: string, seconds: number, firstByteSeconds: number | undefined): void {
    const id = `${api}\n${model}`;
    let series = this.timingSeries.get(id);
    if (series === undefined) {
      series = { duration: this.duration.series({ api, model }), firstByte: this.firstByte.series({ api, model }) };
      this.timingSeries.set(id, series);
    }
    series.duration.observe(seconds);
    if (firstByteSeconds !== undefined) series.firstByte.observe(firstByteSeconds);
  }

  attempt(result: AttemptResult): void {
    let series = this.attemptSeries.get(result);
    if (series === undefined) {
      series = this.attempts.series({ result });
      this.attemptSeries.set(result, series);
    }
    series.inc();
  }

  retry(model: string): void {
    this.retries.inc({ model });
  }

  limited(model: string, limit: string): void {
    this.rateLimited.inc({ model, limit });
  }

  metered(key: string, model: string, deployment: string, counts: Readonly<Record<string, number>>): void {
    const labels = { key, model, deployment };
    this.meteredRequests.inc(labels, counts.requests ?? 0);
    if (counts.estimated_requests) this.estimated.inc(labels, counts.estimated_requests);
    this.tokens.inc({ ...labels, kind: 'prompt' }, counts.prompt_tokens ?? 0);
    this.tokens.inc({ ...labels, kind: 'cached' }, counts.cached_tokens ?? 0);
    this.tokens.inc({ ...labels, kind: 'completion' }, counts.completion_tokens ?? 0);
  }

  usageEventPublished(records: number): void {
    this.usageEvents.inc({ result: 'published' }, records);
  }

  usageEventFailed(records: number): void {
    this.usageEvents.inc({ result: 'failed' }, records);
  }

  redisError(op: string): void {
    this.redisErrors.inc({ op });
  }

  engineMetricsError(reason: EngineMetricsFailure): void {
    this.engineMetricsErrors.inc({ reason });
  }
}
