/**
 * The OpenAI-compatible API on Node's http module directly: the router must add as little
 * latency as possible, and a framework's per-request overhead would be most of it. NestJS runs
 * the operations side (/metrics, gRPC, lifecycle) on other ports.
 *
 * Routes: POST /v1/chat/completions, /v1/completions, /v1/embeddings; GET /v1/models; and
 * /healthz, /readyz for load balancers that probe the API port.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { ApiError, methodNotAllowed, routeNotFound, serverError, serviceUnavailable } from '@gpufleet/openai-protocol';
import { readinessBody, type ReadinessReport } from '@gpufleet/observability';
import type { Principal } from '../keys/key-registry';
import { Exchange, type RouterContext } from './exchange';
import { readBody, sendError, sendJson } from './http-kit';
import { readInferenceRequest, type InferenceApi } from './inference-request';

const INFERENCE_ROUTES: Readonly<Record<string, InferenceApi>> = {
  '/v1/chat/completions': 'chat.completions',
  '/v1/completions': 'completions',
  '/v1/embeddings': 'embeddings',
};

/** OpenAI's model list: the served model names the key may use. */
interface RouterModelList {
  object: 'list';
  data: { id: string; object: 'model'; created: number; owned_by: string }[];
}

export interface RouterServerOptions extends Omit<RouterContext, 'onDone'> {
  readonly readiness: () => Promise<ReadinessReport>;
}

export class RouterServer {
  private readonly server: Server;
  private readonly ctx: RouterContext;
  private draining = false;
  private inflight = 0;
  private idleWaiters: (() => void)[] = [];
  private readonly started = Math.floor(Date.now() / 1000);

  constructor(private readonly options: RouterServerOptions) {
    this.ctx = { ...options, onDone: () => this.exchangeDone() };
    const { config } = options;
    // requestTimeout bounds receiving the request only (a slow-body client), not the answer:
    // streams may run long, REQUEST_TIMEOUT_S bounds each exchange. Node checks both timeouts
    // every connectionsCheckingInterval, so that is kept well under them.
    const headersMs = config.HEADERS_TIMEOUT_S * 1000;
    const bodyMs = Math.max(config.BODY_TIMEOUT_S * 1000, headersMs);
    const serverOptions = {
      headersTimeout: headersMs,
      requestTimeout: bodyMs,
      keepAliveTimeout: config.IDLE_TIMEOUT_S * 1000,
      connectionsCheckingInterval: Math.max(50, Math.min(1_000, headersMs / 4)),
    };
    const handler = (req: IncomingMessage, res: ServerResponse): void => this.handle(req, res);
    // HTTPS only when a certificate is configured: API keys and prompts then never cross the
    // network in clear (a LoadBalancer Service, say).
    this.server =
      config.API_TLS_CERT_FILE && config.API_TLS_KEY_FILE
        ? createHttpsServer({ ...serverOptions, cert: readFileSync(config.API_TLS_CERT_FILE), key: readFileSync(config.API_TLS_KEY_FILE) }, handler)
        : createServer(serverOptions, handler);
    // Connections past the cap are closed as soon as they are accepted.
    this.server.maxConnections = config.MAX_CONNECTIONS;
    this.server.on('drop', () => options.metrics.connectionDropped());
  }

  async listen(port: number, host: string): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    return (this.server.address() as AddressInfo).port;
  }

  get inFlight(): number {
    return this.inflight;
  }

  /**
   * Graceful stop: new requests get 503 with `connection: close`, in-flight ones (streams
   * included) may finish for `timeoutMs`, then every connection closes.
   */
  async drain(timeoutMs: number): Promise<{ unfinished: number }> {
    this.draining = true;
    this.server.closeIdleConnections();
    if (this.inflight > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => this.idleWaiters.push(resolve)),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs))),
      ]);
      clearTimeout(timer);
    }
    const unfinished = this.inflight;
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
    return { unfinished };
  }

  private exchangeDone(): void {
    if (--this.inflight === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q >= 0 ? url.slice(0, q) : url;
    const method = req.method ?? 'GET';
    const api = INFERENCE_ROUTES[path];
    if (api !== undefined) {
      if (method !== 'POST') return this.reply(req, res, methodNotAllowed(method, path, ['POST']), { allow: 'POST' });
      this.inference(api, req, res);
      return;
    }
    switch (path) {
      case '/v1/models':
        if (method !== 'GET') return this.reply(req, res, methodNotAllowed(method, path, ['GET']), { allow: 'GET' });
        this.models(req, res);
        return;
      case '/healthz':
        sendJson(res, 200, { status: 'ok' });
        return;
      case '/readyz':
        this.options.readiness().then(
          (report) => sendJson(res, report.ready && !this.draining ? 200 : 503, readinessBody(report), { 'cache-control': 'no-store' }),
          (err: unknown) => sendError(res, serverError(`readiness: ${(err as Error).message}`)),
        );
        return;
      default:
        this.reply(req, res, routeNotFound(method, path));
    }
  }

  /** Answers an error without a body read: the rest of the body is discarded. */
  private reply(req: IncomingMessage, res: ServerResponse, error: ApiError, headers?: Record<string, string>): void {
    req.resume();
    sendError(res, error, headers);
  }

  private models(req: IncomingMessage, res: ServerResponse): void {
    const principal = this.ctx.keys.authenticate(req.headers.authorization);
    if (principal instanceof ApiError) return this.reply(req, res, principal);
    const key = principal.key;
    const names = key === undefined || key.models === '*' ? this.ctx.directory.models : this.ctx.directory.models.filter((m) => (key.models as readonly string[]).includes(m));
    const body: RouterModelList = {
      object: 'list',
      data: names.map((id) => ({ id, object: 'model', created: this.started, owned_by: 'gpufleet' })),
    };
    req.resume();
    sendJson(res, 200, body);
  }

  private inference(api: InferenceApi, req: IncomingMessage, res: ServerResponse): void {
    const startedAt = performance.now();
    const header = req.headers['x-request-id'];
    const requestId = typeof header === 'string' && header.length > 0 && header.length <= 256 ? header : randomUUID();
    if (this.draining) {
      this.reply(req, res, serviceUnavailable('The router is shutting down; retry (another router replica will answer).'), {
        connection: 'close',
        'retry-after': '1',
        'x-request-id': requestId,
      });
      this.ctx.metrics.request(api, '', 503);
      return;
    }
    if (this.inflight >= this.ctx.config.MAX_IN_FLIGHT) {
      this.reply(
        req,
        res,
        serviceUnavailable(`The router has ${this.inflight} requests in flight, its limit (MAX_IN_FLIGHT); retry shortly.`),
        { 'retry-after': '1', 'x-request-id': requestId },
      );
      this.ctx.metrics.request(api, '', 503);
      this.ctx.metrics.overloaded();
      return;
    }
    // The key is checked before the body is read: a bad one costs no parsing.
    const principal: Principal | ApiError = this.ctx.keys.authenticate(req.headers.authorization);
    if (principal instanceof ApiError) {
      this.reply(req, res, principal, { 'x-request-id': requestId });
      this.ctx.metrics.request(api, '', principal.status);
      return;
    }
    this.inflight++;
    const exchange = new Exchange(this.ctx, api, res, principal, requestId, startedAt, Date.now());
    readBody(req, (error, body) => {
      if (error) {
        if (error instanceof ApiError) exchange.reject(error, { connection: 'close' });
        return; // the client went away while sending; its 'close' ends the exchange
      }
      try {
        exchange.start(readInferenceRequest(api, body));
      } catch (err) {
        if (err instanceof ApiError) exchange.reject(err);
        else {
          this.ctx.logger.error({ err }, `request failed: ${(err as Error).message}`);
          exchange.reject(serverError(`Internal error: ${(err as Error).message}`));
        }
      }
    });
  }
}
