/**
 * Reads every replica's `/metrics` once per ENGINE_METRICS_INTERVAL_S and keeps the engine's own
 * load on the Replica (`engineLoad`), so the routing policies see the requests other router
 * replicas (and clients that bypass routers) put on an engine, not only this router's.
 *
 * - One read in flight per endpoint at most: a slow engine is not asked again until it answered
 *   or ENGINE_METRICS_TIMEOUT_S passed. An endpoint in several pools is read once.
 * - A sample is stored with `inFlightAtSample`, this router's in-flight count on the replica when
 *   the answer arrived, so `effectiveLoad` counts only the other routers' part of it.
 * - Nothing stale: a sample older than STALE_INTERVALS intervals (failing or slow engine) is
 *   dropped, and the policies fall back to this router's in-flight count for that replica.
 * - Failures are counted in `gpufleet_router_engine_metrics_errors_total{reason}` and logged at
 *   most once a minute per endpoint.
 * - A body is read up to ENGINE_METRICS_MAX_KIB: past it (or with a Content-Length above it) the
 *   read is aborted, counted as `too_large` and in `gpufleet_router_limit_refusals_total{limit=
 *   "engine_metrics_max"}`, and logged once per endpoint, so an endless /metrics cannot hold
 *   the router's memory.
 */
import type { Logger } from '@gpufleet/observability';
import { parseEngineMetrics, type EngineLoadSample } from '@gpufleet/routing-core';
import type { Replica } from './replica-pool';

/** Why a read of an engine's /metrics failed (the `reason` label). */
export type EngineMetricsFailure = 'timeout' | 'connect_error' | 'bad_status' | 'no_load_series' | 'too_large';

/** Intervals after which a sample that was not renewed is dropped. */
export const STALE_INTERVALS = 3;
const LOG_EVERY_MS = 60_000;

/** What the poller reads and writes of a replica. */
type PolledReplica = Pick<Replica, 'id' | 'inFlight' | 'removed' | 'engineLoad'>;

export interface EngineMetricsPollerOptions {
  /** The ModelDirectory: every pool, prefill pools included. */
  readonly directory: { everyPool(): Iterable<{ readonly replicas: readonly PolledReplica[] }> };
  readonly metrics: { engineMetricsError(reason: EngineMetricsFailure): void; oversizedEngineMetrics(): void };
  readonly logger: Pick<Logger, 'warn'>;
  /** 0: no polling; policies use this router's in-flight counts alone. */
  readonly intervalMs: number;
  readonly timeoutMs: number;
  /** Bytes of one /metrics body at most (ENGINE_METRICS_MAX_KIB). */
  readonly maxBodyBytes: number;
  /** Sent with every read (the engines' API key, for engines that guard /metrics too). */
  readonly headers?: Readonly<Record<string, string>>;
  /** Tests: a fake engine, a fake clock (milliseconds). */
  readonly fetch?: (url: string, init: RequestInit) => Promise<Response>;
  readonly now?: () => number;
}

interface Endpoint {
  reading: boolean;
  /** now() of the last sample stored; -Infinity before the first. */
  sampledAt: number;
  lastLoggedAt: number;
  /** An oversized body is logged once per endpoint, not once a minute. */
  loggedTooLarge: boolean;
}

class ReadFailure extends Error {
  constructor(
    readonly reason: EngineMetricsFailure,
    message: string,
  ) {
    super(message);
  }
}

export class EngineMetricsPoller {
  private readonly endpoints = new Map<string, Endpoint>();
  private readonly fetch: (url: string, init: RequestInit) => Promise<Response>;
  private readonly now: () => number;
  private readonly staleMs: number;
  private timer: NodeJS.Timeout | undefined;
  /** Reads in flight, aborted on stop. (One controller and timer each: AbortSignal.any on a long-lived signal leaks in Node 20.) */
  private readonly reads = new Set<AbortController>();
  private stopped = false;

  constructor(private readonly options: EngineMetricsPollerOptions) {
    this.fetch = options.fetch ?? ((url, init) => fetch(url, init));
    this.now = options.now ?? (() => performance.now());
    this.staleMs = STALE_INTERVALS * options.intervalMs;
  }

  get enabled(): boolean {
    return this.options.intervalMs > 0;
  }

  start(): void {
    if (!this.enabled || this.timer !== undefined) return;
    this.stopped = false;
    this.timer = setInterval(() => this.tick(), this.options.intervalMs);
    this.timer.unref();
    this.tick();
  }

  /** Stops polling, aborts reads in flight and drops every sample. */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.stopped = true;
    for (const read of this.reads) read.abort();
    this.endpoints.clear();
    for (const pool of this.options.directory.everyPool()) for (const replica of pool.replicas) replica.engineLoad = undefined;
  }

  /** One round: drops stale samples, starts a read of every endpoint that has none in flight. */
  tick(): void {
    const now = this.now();
    const byEndpoint = new Map<string, PolledReplica[]>();
    for (const pool of this.options.directory.everyPool()) {
      for (const replica of pool.replicas) {
        const sharing = byEndpoint.get(replica.id);
        if (sharing === undefined) byEndpoint.set(replica.id, [replica]);
        else sharing.push(replica);
      }
    }
    for (const id of this.endpoints.keys()) if (!byEndpoint.has(id)) this.endpoints.delete(id);
    for (const [id, replicas] of byEndpoint) {
      let endpoint = this.endpoints.get(id);
      if (endpoint === undefined) {
        endpoint = { reading: false, sampledAt: -Infinity, lastLoggedAt: -Infinity, loggedTooLarge: false };
        this.endpoints.set(id, endpoint);
      }
      if (now - endpoint.sampledAt > this.staleMs) for (const replica of replicas) replica.engineLoad = undefined;
      if (!endpoint.reading) void this.read(id, endpoint, replicas);
    }
  }

  private async read(id: string, endpoint: Endpoint, replicas: readonly PolledReplica[]): Promise<void> {
    endpoint.reading = true;
    const controller = new AbortController();
    const timeoutMs = this.options.timeoutMs;
    const timer = setTimeout(() => controller.abort(new ReadFailure('timeout', `did not answer within ${timeoutMs / 1000} s (ENGINE_METRICS_TIMEOUT_S)`)), timeoutMs);
    timer.unref();
    this.reads.add(controller);
    try {
      const sample = await this.readSample(id, controller.signal);
      if (this.stopped) return;
      endpoint.sampledAt = this.now();
      for (const replica of replicas) if (!replica.removed) replica.engineLoad = { ...sample, inFlightAtSample: replica.inFlight };
    } catch (err) {
      if (this.stopped) return;
      const failure = classify(err);
      this.options.metrics.engineMetricsError(failure.reason);
      if (failure.reason === 'too_large') {
        this.options.metrics.oversizedEngineMetrics();
        if (endpoint.loggedTooLarge) return;
        endpoint.loggedTooLarge = true;
        this.options.logger.warn({ replica: id, reason: failure.reason }, `engine metrics: ${id}/metrics ${failure.message}; routing counts only this router's requests on it (logged once)`);
        return;
      }
      const now = this.now();
      if (now - endpoint.lastLoggedAt >= LOG_EVERY_MS) {
        endpoint.lastLoggedAt = now;
        this.options.logger.warn(
          { replica: id, reason: failure.reason },
          `engine metrics: ${id}/metrics ${failure.message}; routing counts only this router's requests on it until it answers (logged once a minute)`,
        );
      }
    } finally {
      clearTimeout(timer);
      this.reads.delete(controller);
      endpoint.reading = false;
    }
  }

  private async readSample(id: string, signal: AbortSignal): Promise<EngineLoadSample> {
    const res = await this.fetch(`${id}/metrics`, { signal, headers: this.options.headers });
    if (!res.ok) {
      await res.body?.cancel().catch(() => undefined);
      throw new ReadFailure('bad_status', `answered ${res.status}`);
    }
    const sample = parseEngineMetrics(await this.readBody(res));
    if (sample === undefined) {
      throw new ReadFailure(
        'no_load_series',
        'holds none of the load series the router reads (vllm:num_requests_running/waiting, sglang:num_running_reqs/num_queue_reqs, tgi_batch_current_size/tgi_queue_size)',
      );
    }
    return sample;
  }

  /** The body as text, read up to maxBodyBytes; past that the read is cancelled (the socket closed). */
  private async readBody(res: Response): Promise<string> {
    const max = this.options.maxBodyBytes;
    const tooLarge = (): ReadFailure => new ReadFailure('too_large', `sent more than ${Math.round(max / 1024)} KiB (ENGINE_METRICS_MAX_KIB); the read was cut`);
    const declared = Number(res.headers.get('content-length') ?? NaN);
    if (declared > max) {
      await res.body?.cancel().catch(() => undefined);
      throw tooLarge();
    }
    if (!res.body) return '';
    const reader = res.body.getReader();
    const chunks: Uint8Array[] = [];
    let bytes = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      if (bytes > max) {
        await reader.cancel().catch(() => undefined);
        throw tooLarge();
      }
      chunks.push(value);
    }
    return Buffer.concat(chunks).toString('utf8');
  }
}

function classify(err: unknown): ReadFailure {
  // A timeout aborts the read with a ReadFailure, which fetch rethrows as it is.
  if (err instanceof ReadFailure) return err;
  // fetch rejects with TypeError('fetch failed') and the socket error as its cause.
  const message = prop(prop(err, 'cause'), 'message') ?? prop(err, 'message') ?? err;
  return new ReadFailure('connect_error', `failed: ${String(message)}`);
}

/** Duck-typed: errors of another realm (Jest's) fail `instanceof Error`. */
function prop(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}
