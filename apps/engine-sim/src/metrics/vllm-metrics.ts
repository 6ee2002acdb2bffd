/**
 * The engine's Prometheus metrics under vLLM's names and labels (`model_name`, `engine`), so
 * dashboards, autoscalers and routers written for vLLM read the simulator unchanged; plus a few
 * `gpufleet_*` series about the simulation itself and Node's process metrics (prom-client).
 *
 * The vLLM series sit on the request hot path and use the plain series of `exposition.ts`;
 * the rest use prom-client. `/metrics` renders both.
 */
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { SequenceResult } from '@gpufleet/engine-sim-core';
import { CounterFamily, GaugeFamily, HistogramSeries, labelText, type Series } from './exposition';

const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560];
const ITL_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80];
const REQUEST_LATENCY_BUCKETS = [0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680];

/** 1, 2, 5, 10, 20, 50, … up to `max`: vLLM's token-count buckets. */
export function oneTwoFive(max: number): number[] {
  const out: number[] = [];
  for (let base = 1; base <= max; base *= 10) {
    for (const m of [1, 2, 5]) if (base * m <= max) out.push(base * m);
  }
  return out;
}

export type FinishedReason = 'stop' | 'length' | 'abort' | 'error';

export interface EngineGaugeSource {
  readonly running: number;
  readonly waiting: number;
  readonly kvUsage: number;
}

export interface VllmMetricsOptions {
  readonly modelName: string;
  readonly maxModelLen: number;
  readonly blockSize: number;
  readonly kvCacheBlocks: number;
  readonly enablePrefixCaching: boolean;
  readonly replica: string;
  readonly tensorParallelSize: number;
  readonly engine: EngineGaugeSource;
}

type Inc = { inc(by?: number): void };

export class VllmMetrics {
  /** prom-client registry: process metrics and the gpufleet_* series. */
  readonly registry = new Registry();
  private readonly vllm: Series[] = [];
  private readonly prefixQueries: Inc;
  private readonly prefixHits: Inc;
  private readonly externalQueries: Inc;
  private readonly externalHits: Inc;
  private readonly promptTokens: Inc;
  private readonly generationTokens: Inc;
  private readonly success = new Map<FinishedReason, Inc>();
  private readonly ttft: HistogramSeries;
  private readonly itl: HistogramSeries;
  private readonly e2e: HistogramSeries;
  private readonly queueTime: HistogramSeries;
  private readonly prefillTime: HistogramSeries;
  private readonly decodeTime: HistogramSeries;
  private readonly inferenceTime: HistogramSeries;
  private readonly requestPromptTokens: HistogramSeries;
  private readonly requestGenerationTokens: HistogramSeries;
  private readonly injectedErrors: Counter<string>;
  private readonly kvEvents: Counter<'type'>;
  private readonly kvBatchesDropped: Counter<string>;
  private readonly kvTransferBlocks: Counter<'role'>;
  private readonly httpRequests: Counter<'method' | 'route' | 'status_code'>;
  private readonly httpChildren = new Map<string, Inc>();

  constructor(options: VllmMetricsOptions) {
    const labels = { model_name: options.modelName, engine: '0' };
    const engine = options.engine;
    const add = <S extends Series>(series: S): S => {
      this.vllm.push(series);
      return series;
    };
    const counter = (name: string, help: string): Inc => add(new CounterFamily(name, help)).child(labels);
    const histogram = (name: string, help: string, buckets: readonly number[]): HistogramSeries => add(new HistogramSeries(name, help, buckets, labels));

    add(new GaugeFamily('vllm:num_requests_running', 'Number of requests in model execution batches.')).child(labels, () => engine.running);
    add(new GaugeFamily('vllm:num_requests_waiting', 'Number of requests waiting to be processed.')).child(labels, () => engine.waiting);
    add(new GaugeFamily('vllm:kv_cache_usage_perc', 'KV-cache usage. 1 means 100 percent usage.')).child(labels, () => engine.kvUsage);
    counter('vllm:num_preemptions_total', 'Cumulative number of preemptions from the engine.');
    this.prefixQueries = counter('vllm:prefix_cache_queries_total', 'Prefix cache queries, in terms of number of queried tokens.');
    this.prefixHits = counter('vllm:prefix_cache_hits_total', 'Prefix cache hits, in terms of number of cached tokens.');
    this.externalQueries = counter(
      'vllm:external_prefix_cache_queries_total',
      'External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens.',
    );
    this.externalHits = counter(
      'vllm:external_prefix_cache_hits_total',
      'External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens.',
    );
    this.promptTokens = counter('vllm:prompt_tokens_total', 'Number of prefill tokens processed.');
    this.generationTokens = counter('vllm:generation_tokens_total', 'Number of generation tokens processed.');
    const success = add(new CounterFamily('vllm:request_success_total', 'Count of successfully processed requests.'));
    for (const reason of ['stop', 'length', 'abort', 'error'] as const) this.success.set(reason, success.child({ ...labels, finished_reason: reason }));
    this.ttft = histogram('vllm:time_to_first_token_seconds', 'Histogram of time to first token in seconds.', TTFT_BUCKETS);
    this.itl = histogram('vllm:inter_token_latency_seconds', 'Histogram of inter-token latency in seconds.', ITL_BUCKETS);
    this.e2e = histogram('vllm:e2e_request_latency_seconds', 'Histogram of e2e request latency in seconds.', REQUEST_LATENCY_BUCKETS);
    this.queueTime = histogram('vllm:request_queue_time_seconds', 'Histogram of time spent in WAITING phase for request.', REQUEST_LATENCY_BUCKETS);
    this.prefillTime = histogram('vllm:request_prefill_time_seconds', 'Histogram of time spent in PREFILL phase for request.', REQUEST_LATENCY_BUCKETS);
    this.decodeTime = histogram('vllm:request_decode_time_seconds', 'Histogram of time spent in DECODE phase for request.', REQUEST_LATENCY_BUCKETS);
    this.inferenceTime = histogram('vllm:request_inference_time_seconds', 'Histogram of time spent in RUNNING phase for request.', REQUEST_LATENCY_BUCKETS);
    const tokenBuckets = oneTwoFive(options.maxModelLen);
    this.requestPromptTokens = histogram('vllm:request_prompt_tokens', 'Number of prefill tokens processed.', tokenBuckets);
    this.requestGenerationTokens = histogram('vllm:request_generation_tokens', 'Number of generation tokens processed.', tokenBuckets);
    const cacheConfig = labelText({
      block_size: String(options.blockSize),
      num_gpu_blocks: String(options.kvCacheBlocks),
      enable_prefix_caching: options.enablePrefixCaching ? 'True' : 'False',
      engine: '0',
    });
    add({ render: () => `# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig.\n# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info${cacheConfig} 1\n` });

    const registers = [this.registry];
    new Gauge({
      name: 'gpufleet_engine_sim_info',
      help: 'The simulated engine: replica, served model and tensor-parallel size (always 1).',
      labelNames: ['replica', 'model_name', 'tensor_parallel_size'],
      registers,
    })
      .labels({ replica: options.replica, model_name: options.modelName, tensor_parallel_size: String(options.tensorParallelSize) })
      .set(1);
    this.injectedErrors = new Counter({ name: 'gpufleet_engine_sim_injected_errors_total', help: 'Requests answered with an injected error (ERROR_RATE).', registers });
    this.kvEvents = new Counter({ name: 'gpufleet_engine_sim_kv_events_total', help: 'KV cache events published on NATS, by type.', labelNames: ['type'], registers });
    this.kvBatchesDropped = new Counter({
      name: 'gpufleet_engine_sim_kv_event_batches_dropped_total',
      help: 'KV event batches not published because NATS was not connected (yet).',
      registers,
    });
    this.kvTransferBlocks = new Counter({
      name: 'gpufleet_engine_sim_kv_transfer_blocks_total',
      help: 'KV blocks of disaggregated prefill/decode: offered to remote decode engines (role="prefill"), pulled from remote prefill engines (role="decode").',
      labelNames: ['role'],
      registers,
    });
    this.kvTransferBlocks.inc({ role: 'prefill' }, 0);
    this.kvTransferBlocks.inc({ role: 'decode' }, 0);
    this.httpRequests = new Counter({ name: 'gpufleet_http_requests_total', help: 'HTTP requests served.', labelNames: ['method', 'route', 'status_code'], registers });
    collectDefaultMetrics({ register: this.registry });
  }

  /** A request entered the running batch. */
  admitted(promptTokens: number, queriedTokens: number, cachedTokens: number): void {
    this.promptTokens.inc(promptTokens);
    if (queriedTokens > 0) this.prefixQueries.inc(queriedTokens);
    if (cachedTokens > 0) this.prefixHits.inc(cachedTokens);
  }

  /**
   * A disaggregated decode entered the running batch: its prompt was looked up on the prefill
   * engine (vLLM counts every request's prompt when a KV connector is configured; the simulator
   * only these), `externalTokens` of it were pulled, in `blocks` blocks.
   */
  kvPulled(promptTokens: number, externalTokens: number, blocks: number): void {
    this.externalQueries.inc(promptTokens);
    if (externalTokens > 0) this.externalHits.inc(externalTokens);
    if (blocks > 0) this.kvTransferBlocks.inc({ role: 'decode' }, blocks);
  }

  /** A prefill for a remote decode engine finished, offering `blocks` KV blocks. */
  kvOffered(blocks: number): void {
    if (blocks > 0) this.kvTransferBlocks.inc({ role: 'prefill' }, blocks);
  }

  /** A request finished; `generated` counts the tokens of all its choices. */
  finished(result: SequenceResult, generated: number, reason: FinishedReason): void {
    this.success.get(reason)?.inc();
    if (generated > 0) this.generationTokens.inc(generated);
    this.e2e.observe(result.e2eMs / 1000);
    this.queueTime.observe(result.queuedMs / 1000);
    this.requestPromptTokens.observe(result.promptTokens);
    this.requestGenerationTokens.observe(generated);
    if (Number.isNaN(result.ttftMs)) return;
    this.ttft.observe(result.ttftMs / 1000);
    this.prefillTime.observe(result.prefillMs / 1000);
    this.decodeTime.observe(result.decodeMs / 1000);
    this.inferenceTime.observe((result.prefillMs + result.decodeMs) / 1000);
    const times = result.tokenTimesMs;
    if (times.length > 1) {
      for (let i = 1; i < times.length; i++) this.itl.observe((times[i] - times[i - 1]) / 1000);
    } else if (result.outputTokens > 1) {
      this.itl.observe(result.decodeMs / (result.outputTokens - 1) / 1000, result.outputTokens - 1);
    }
  }

  injectedError(): void {
    this.injectedErrors.inc();
  }

  kvEventPublished(type: string, count = 1): void {
    this.kvEvents.inc({ type }, count);
  }

  kvBatchDropped(): void {
    this.kvBatchesDropped.inc();
  }

  httpRequest(method: string, route: string, status: number): void {
    const key = `${method} ${route} ${status}`;
    let child = this.httpChildren.get(key);
    if (!child) {
      child = this.httpRequests.labels({ method, route, status_code: String(status) });
      this.httpChildren.set(key, child);
    }
    child.inc();
  }

  /** The text exposition of every series. */
  async text(): Promise<string> {
    let out = '';
    for (const series of this.vllm) out += series.render();
    return out + (await this.registry.metrics());
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
