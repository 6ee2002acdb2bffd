/**
 * The engine simulator's HTTP server, on Node's http module directly: an engine must never be
 * the bottleneck of a router benchmark, and a framework's per-request overhead would make it so.
 *
 * Routes: the OpenAI-compatible API (`/v1/chat/completions`, `/v1/completions`,
 * `/v1/embeddings`, `/v1/models`), vLLM's `/health`, `/version`, `/reset_prefix_cache`, and the
 * gpufleet probes `/healthz`, `/readyz`, `/metrics`. Every answer names the replica in
 * `x-gpufleet-replica`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { kvCacheEventsSubject } from '@gpufleet/contracts';
import { EngineScheduler, FaultInjector, systemClock, type Clock } from '@gpufleet/engine-sim-core';
import {
  ApiError,
  methodNotAllowed,
  parseJsonBody,
  routeNotFound,
  serverError,
  serviceUnavailable,
  unauthorized,
  type ErrorFormat,
} from '@gpufleet/openai-protocol';
import { natsSettingsFromConfig } from '@gpufleet/messaging';
import { evaluateReadiness, readinessBody, type Logger, type ReadinessCheck } from '@gpufleet/observability';
import { VllmMetrics } from '../metrics/vllm-metrics';
import { KvEventsPublisher } from '../kv-events/kv-events.publisher';
import { readBody, sendError, sendJson, sendText, type ResponseDecor } from './http-kit';
import { InferenceService, type Exchange } from './inference';
import type { EngineSimConfig } from '../config';

/** Exit status of a simulated crash (`--crash-after`): sysexits EX_SOFTWARE. */
export const CRASH_EXIT_CODE = 70;

export const ENGINE_SIM_VERSION = '0.1.0';

type InferenceRoute = 'chat' | 'completions' | 'embeddings';

const INFERENCE_ROUTES: Readonly<Record<string, InferenceRoute>> = {
  '/v1/chat/completions': 'chat',
  '/v1/completions': 'completions',
  '/v1/embeddings': 'embeddings',
};

export interface EngineSimServerOptions {
  readonly config: EngineSimConfig;
  readonly logger: Logger;
  readonly clock?: Clock;
  /** Called when `--crash-after` is reached, after the answer that reached it was sent. */
  readonly onCrash: (answered: number) => void;
  /** The leader of an engine group: what the group still waits for (undefined once formed); nothing is served before. */
  readonly group?: { waiting(): string | undefined };
}

export class EngineSimServer {
  readonly scheduler: EngineScheduler;
  readonly faults: FaultInjector;
  readonly metrics: VllmMetrics;
  readonly kvEvents?: KvEventsPublisher;
  private readonly inference: InferenceService;
  private readonly server: Server;
  private readonly config: EngineSimConfig;
  private readonly logger: Logger;
  private readonly errorFormat: ErrorFormat;
  private readonly authorization?: string;
  private readonly debug: boolean;
  private readonly readiness: ReadinessCheck[];
  private draining = false;
  private inflight = 0;
  private inflightIdle: (() => void)[] = [];
  private readonly decor: ResponseDecor;
  private readonly drainingDecor: ResponseDecor;

  constructor(private readonly options: EngineSimServerOptions) {
    const config = options.config;
    this.config = config;
    this.logger = options.logger;
    this.debug = options.logger.isLevelEnabled('debug');
    this.errorFormat = config.ERROR_FORMAT;
    this.authorization = config.API_KEY ? `Bearer ${config.API_KEY}` : undefined;
    this.decor = { replica: config.REPLICA_NAME, draining: false };
    this.drainingDecor = { replica: config.REPLICA_NAME, draining: true };
    const clock = options.clock ?? systemClock;
    const servedNames = config.SERVED_MODEL_NAME && config.SERVED_MODEL_NAME.length > 0 ? [...config.SERVED_MODEL_NAME] : [config.MODEL];

    if (config.NATS_URL && config.NATS_URL.length > 0) {
      this.kvEvents = new KvEventsPublisher({
        subject: config.KV_EVENTS_SUBJECT ?? kvCacheEventsSubject(config.GPUFLEET_CLUSTER, config.REPLICA_NAME),
        replica: config.REPLICA_NAME,
        model: servedNames[0],
        blockSize: config.BLOCK_SIZE,
        logger: options.logger,
        onPublished: (events) => {
          for (const event of events) this.metrics.kvEventPublished(event.type);
        },
        onDropped: () => this.metrics.kvBatchDropped(),
      });
    }
    const kvEvents = this.kvEvents;
    this.scheduler = new EngineScheduler(
      {
        maxNumSeqs: config.MAX_NUM_SEQS,
        blockSize: config.BLOCK_SIZE,
        kvCacheBlocks: config.KV_CACHE_BLOCKS,
        enablePrefixCaching: config.ENABLE_PREFIX_CACHING,
        prefillUsPerToken: config.PREFILL_US_PER_TOKEN,
        itlMs: config.ITL_MS,
        kvTransferUsPerBlock: config.KV_TRANSFER_US_PER_BLOCK,
        loadSlowdown: config.LOAD_SLOWDOWN,
        latencyJitter: config.LATENCY_JITTER,
        seed: config.SEED,
      },
      clock,
      kvEvents ? (event) => kvEvents.push(event) : undefined,
    );
    this.faults = new FaultInjector(
      { errorRate: config.ERROR_RATE, crashAfter: config.CRASH_AFTER, slowStartMs: config.SLOW_START_S * 1000, seed: config.SEED },
      clock,
    );
    this.metrics = new VllmMetrics({
      modelName: servedNames[0],
      maxModelLen: config.MAX_MODEL_LEN,
      blockSize: config.BLOCK_SIZE,
      kvCacheBlocks: config.KV_CACHE_BLOCKS,
      enablePrefixCaching: config.ENABLE_PREFIX_CACHING,
      replica: config.REPLICA_NAME,
      tensorParallelSize: config.TENSOR_PARALLEL_SIZE,
      engine: this.scheduler,
    });
    this.inference = new InferenceService(
      {
        servedModelNames: servedNames,
        modelRoot: config.MODEL,
        maxModelLen: config.MAX_MODEL_LEN,
        meanOutputTokens: config.MEAN_OUTPUT_LEN,
        embeddingDim: config.EMBEDDING_DIM,
        seed: config.SEED,
        errorRate: config.ERROR_RATE,
        engineId: config.REPLICA_NAME,
        tensorParallelSize: config.TENSOR_PARALLEL_SIZE,
      },
      this.scheduler,
      this.metrics,
      () => this.faults.injectError(),
    );
    this.readiness = [
      {
        name: 'model',
        check: () => {
          if (this.faults.loading()) throw new Error(`loading (simulated slow start, ${(this.faults.loadingLeftMs() / 1000).toFixed(1)} s left)`);
        },
      },
      {
        name: 'shutdown',
        check: () => {
          if (this.draining) throw new Error('draining: finishing in-flight requests before exit');
        },
      },
    ];
    const group = options.group;
    if (group) {
      this.readiness.push({
        name: 'group',
        check: () => {
          const waiting = group.waiting();
          if (waiting) throw new Error(`engine group forming: ${waiting}`);
        },
      });
    }
    if (this.kvEvents) {
      const kv = this.kvEvents;
      this.readiness.push({
        name: 'kv-events',
        check: () => {
          if (!kv.connected) throw new Error('connecting to NATS');
        },
      });
    }

    this.server = createServer({ keepAliveTimeout: 65_000, headersTimeout: 70_000, requestTimeout: 0 }, (req, res) => this.handle(req, res));
  }

  /** Starts listening (and connecting to NATS); resolves with the bound port. */
  async listen(port: number = this.config.HTTP_PORT, host: string = this.config.HOST): Promise<number> {
    if (this.kvEvents && this.config.NATS_URL) {
      this.kvEvents.start(natsSettingsFromConfig({ ...this.config, NATS_URL: this.config.NATS_URL }, `engine-sim@${this.config.REPLICA_NAME}`));
    }
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    const bound = (this.server.address() as AddressInfo).port;
    // Where a decode engine would pull this engine's KV from (kv_transfer_params.remote_host/port).
    this.inference.kvTransferEndpoint = { host: host === '0.0.0.0' || host === '::' || host === '' ? hostname() : host, port: bound };
    return bound;
  }

  get isDraining(): boolean {
    return this.draining;
  }

  /**
   * Graceful stop: refuse new requests with 503 (and `connection: close`), wait up to
   * `timeoutMs` for in-flight ones, close the server and the NATS connection.
   */
  async drain(timeoutMs: number = this.config.DRAIN_TIMEOUT_S * 1000): Promise<{ unfinished: number }> {
    this.draining = true;
    this.server.closeIdleConnections();
    if (this.inflight > 0) {
      await Promise.race([
        new Promise<void>((resolve) => this.inflightIdle.push(resolve)),
        new Promise<void>((resolve) => setTimeout(resolve, timeoutMs).unref()),
      ]);
    }
    const unfinished = this.inflight;
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
    await this.kvEvents?.close();
    return { unfinished };
  }

  // ---------------------------------------------------------------- routing

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q >= 0 ? url.slice(0, q) : url;
    const method = req.method ?? 'GET';
    const requestId = req.headers['x-request-id'];
    const decor: ResponseDecor =
      typeof requestId === 'string' ? { replica: this.config.REPLICA_NAME, draining: this.draining, requestId } : this.draining ? this.drainingDecor : this.decor;

    const inference = INFERENCE_ROUTES[path];
    if (inference !== undefined) {
      if (method !== 'POST') return this.fail(res, decor, methodNotAllowed(method, path, ['POST']), path, method, { allow: 'POST' });
      this.handleInference(inference, path, req, res, decor);
      return;
    }
    switch (path) {
      case '/v1/models':
        if (method !== 'GET') return this.fail(res, decor, methodNotAllowed(method, path, ['GET']), path, method, { allow: 'GET' });
        if (!this.admitApi(req, res, decor, path, method)) return;
        sendJson(res, decor, 200, this.inference.models());
        this.metrics.httpRequest(method, path, 200);
        return;
      case '/healthz':
        sendJson(res, decor, 200, { status: 'ok' });
        return;
      case '/health': {
        // vLLM's probe: 200 with an empty body when the engine can serve.
        const status = this.faults.loading() || this.draining || this.options.group?.waiting() ? 503 : 200;
        sendText(res, decor, status, '');
        return;
      }
      case '/readyz':
        void this.readyz(res, decor);
        return;
      case '/metrics':
        void this.metrics.text().then(
          (text) => sendText(res, decor, 200, text, this.metrics.contentType),
          (err: unknown) => this.fail(res, decor, serverError(`metrics: ${(err as Error).message}`), path, method),
        );
        return;
      case '/version':
        sendJson(res, decor, 200, { version: ENGINE_SIM_VERSION });
        return;
      case '/reset_prefix_cache':
        if (method !== 'POST') return this.fail(res, decor, methodNotAllowed(method, path, ['POST']), path, method, { allow: 'POST' });
        if (!this.scheduler.resetPrefixCache()) {
          this.fail(res, decor, new ApiError(409, 'invalid_request_error', 'Running requests hold cached blocks; retry when idle.', null, 'cache_in_use'), path, method);
          return;
        }
        sendText(res, decor, 200, '');
        return;
      default:
        this.fail(res, decor, routeNotFound(method, path), 'unmatched', method);
    }
  }

  /** Loading, draining and the API key: false when the request was answered already. */
  private admitApi(req: IncomingMessage, res: ServerResponse, decor: ResponseDecor, route: string, method: string): boolean {
    if (this.authorization !== undefined && req.headers.authorization !== this.authorization) {
      this.fail(res, decor, unauthorized(), route, method);
      return false;
    }
    if (this.draining) {
      this.fail(res, decor, serviceUnavailable('The engine is shutting down; retry on another replica.'), route, method, { 'retry-after': '1' });
      return false;
    }
    const forming = this.options.group?.waiting();
    if (forming) {
      this.fail(res, decor, serviceUnavailable(`The engine group is forming: ${forming}.`), route, method, { 'retry-after': '1' });
      return false;
    }
    if (this.faults.loading()) {
      const left = Math.ceil(this.faults.loadingLeftMs() / 1000);
      this.fail(res, decor, serviceUnavailable(`The model is still loading (simulated slow start, ${left} s left).`), route, method, { 'retry-after': String(left) });
      return false;
    }
    return true;
  }

  private handleInference(route: InferenceRoute, path: string, req: IncomingMessage, res: ServerResponse, decor: ResponseDecor): void {
    if (!this.admitApi(req, res, decor, path, 'POST')) {
      req.resume();
      return;
    }
    this.inflight++;
    let cancel: (() => void) | undefined;
    res.once('close', () => {
      if (!res.writableFinished && cancel) cancel();
      this.metrics.httpRequest('POST', path, res.statusCode);
      if (--this.inflight === 0 && this.inflightIdle.length > 0) {
        const waiters = this.inflightIdle;
        this.inflightIdle = [];
        for (const resolve of waiters) resolve();
      }
      if (this.debug) this.logger.debug({ http: { method: 'POST', path, status_code: res.statusCode } }, `POST ${path} ${res.statusCode}`);
      if (this.faults.countAnswered()) this.options.onCrash(this.faults.answered);
    });
    const exchange: Exchange = {
      res,
      decor,
      onAbort: (fn) => {
        cancel = fn;
      },
    };
    readBody(req, (error, text) => {
      if (error) {
        this.answerError(res, decor, error, { connection: 'close' });
        return;
      }
      try {
        const body = parseJsonBody(text);
        if (route === 'chat') this.inference.chat(body, exchange);
        else if (route === 'completions') this.inference.completions(body, exchange);
        else this.inference.embeddings(body, exchange);
      } catch (err) {
        this.answerError(res, decor, err);
      }
    });
  }

  private answerError(res: ServerResponse, decor: ResponseDecor, error: unknown, extra?: Record<string, string>): void {
    if (error instanceof ApiError) {
      sendError(res, decor, error, this.errorFormat, extra);
      return;
    }
    this.logger.error({ err: error }, `request failed: ${(error as Error).message}`);
    sendError(res, decor, serverError(`Internal error: ${(error as Error).message}`), this.errorFormat, extra);
  }

  private fail(res: ServerResponse, decor: ResponseDecor, error: ApiError, route: string, method: string, extra?: Record<string, string>): void {
    sendError(res, decor, error, this.errorFormat, extra);
    this.metrics.httpRequest(method, route, error.status);
  }

  private async readyz(res: ServerResponse, decor: ResponseDecor): Promise<void> {
    const report = await evaluateReadiness(this.readiness);
    sendJson(res, decor, report.ready ? 200 : 503, readinessBody(report), { 'cache-control': 'no-store' });
  }
}
