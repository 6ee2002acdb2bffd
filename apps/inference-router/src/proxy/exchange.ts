/**
 * One proxied inference request, from its validated body to its last byte: scope and model
 * checks, the rate limit, the wait for a replica, attempts (retried on another replica only
 * before the engine's first byte), the relay with backpressure, timeouts, client disconnects,
 * passive health, metering and the rate-limit settlement. A request that lands on the decode
 * replica of a disaggregated deployment is prefilled first on one of its prefill replicas
 * (`PrefillStep`), and sent to the decode replica with the KV transfer parameters it answered.
 */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { UsageRecord } from '@gpufleet/contracts';
import { ApiError, modelNotFound, rateLimited, serviceUnavailable } from '@gpufleet/openai-protocol';
import { authorize, RetryPlan, type RateLimitResult, type RouteRequest } from '@gpufleet/routing-core';
import type { RouterConfig } from '../config';
import type { ModelDirectory } from '../deployments/model-directory';
import type { Replica, ReplicaPool, AcquireFailure } from '../deployments/replica-pool';
import type { KeyRegistry, Principal } from '../keys/key-registry';
import { RateLimitUnavailableError, type RateLimiter } from '../limits/rate-limiter';
import type { UsageMeter } from '../metering/usage-meter';
import { BodyTail, completionBudget, estimateCompletionTokens, estimatePromptTokens, type TokenUsage } from '../metering/usage';
import type { AttemptResult, RouterMetrics } from '../metrics/router-metrics';
import type { Logger } from '@gpufleet/observability';
import { attemptOutcome, engineMessage, forbiddenModel, gatewayTimeout, sendError, streamErrorEvent, upstreamFailed } from './http-kit';
import { promptText, type InferenceApi, type InferenceRequest } from './inference-request';
import { decodeRequestBody, PrefillStep, type PrefillResult } from './prefill';
import { SseEventTooLarge, SseRelay } from './sse-relay';
import { engineRequestHeaders, type UpstreamCall, type UpstreamError, type UpstreamHandler } from './upstream';

/** What every exchange shares: built once by the server. */
export interface RouterContext {
  readonly config: RouterConfig;
  readonly directory: ModelDirectory;
  readonly keys: KeyRegistry;
  readonly limiter: RateLimiter;
  readonly meter: UsageMeter;
  readonly metrics: RouterMetrics;
  readonly logger: Logger;
  readonly cacheAware: boolean;
  readonly requestTimeoutMs: number;
  /** The exchange is over (for draining). */
  readonly onDone: () => void;
}

const PATHS: Readonly<Record<InferenceApi, string>> = {
  'chat.completions': '/v1/chat/completions',
  completions: '/v1/completions',
  embeddings: '/v1/embeddings',
};

/** Bytes of an engine's error body kept for the 502 message. */
const ERROR_BODY_BYTES = 4096;

/** Disaggregated requests: the engines that prefilled and decoded the answer. */
export const PREFILL_REPLICA_HEADER = 'x-gpufleet-prefill-replica';
export const DECODE_REPLICA_HEADER = 'x-gpufleet-decode-replica';

function uncork(exchange: Exchange): void {
  exchange.uncork();
}

export class Exchange implements UpstreamHandler {
  private finished = false;
  private pool: ReplicaPool | undefined;
  private request: InferenceRequest | undefined;
  private plan: RetryPlan | undefined;
  /** The replica the current attempt holds (counted in flight). */
  private held: Replica | undefined;
  private lastReplica: Replica | undefined;
  /** The request in flight on the held replica. */
  private call: UpstreamCall | undefined;
  /** The engine's status, once its answer started. */
  private upStatus: number | undefined;
  /** A 5xx answer's body, kept for the error message (the attempt is retried or reported). */
  private errorChunks: Buffer[] | undefined;
  private errorSize = 0;
  /**
   * The last chunk of a non-streamed answer, written with `end()` when the answer completes,
   * so that a one-chunk answer leaves in one write instead of two.
   */
  private lastChunk: Buffer | undefined;
  private corked = false;
  private relay: SseRelay | undefined;
  private tail: BodyTail | undefined;
  private timer: NodeJS.Timeout | undefined;
  private withdraw: (() => void) | undefined;
  private reservedTokens = 0;
  private rateStanding: RateLimitResult | undefined;
  private firstByteAt = 0;
  private paused = false;
  private resent = false;
  private lastFailureWasUnavailable = false;
  /** What the routing policy sees of this request (kept for a prefill step's own plan). */
  private routeRequest: RouteRequest | undefined;
  // Disaggregated deployments only:
  /** The prefill step in progress. */
  private prefill: PrefillStep | undefined;
  /** The prefill pool whose KV transfer parameters `decodeBody` carries. */
  private prefilledBy: ReplicaPool | undefined;
  /** The upstream body with the prefill engine's `kv_transfer_params`. */
  private decodeBody: Buffer | undefined;
  private prefillReplicaName: string | undefined;
  /** Status of an answer the router relayed from a buffered body (a prefill engine's 4xx). */
  private bufferedStatus: number | undefined;

  constructor(
    private readonly ctx: RouterContext,
    private readonly api: InferenceApi,
    private readonly res: ServerResponse,
    private readonly principal: Principal,
    private readonly requestId: string,
    private readonly startedAt: number,
    private readonly startedWallMs: number,
  ) {
    res.once('close', () => this.onClientClose());
    this.timer = setTimeout(() => this.onTimeout(), ctx.requestTimeoutMs);
  }

  /** Runs the request once its body is read and validated. */
  start(request: InferenceRequest): void {
    if (this.finished) return;
    this.request = request;
    const { model } = request;
    const key = this.principal.key;
    if (key !== undefined) {
      const verdict = authorize(key, model, Date.now());
      if (!verdict.ok) {
        this.fail(verdict.reason === 'forbidden_model' ? forbiddenModel(verdict.message) : new ApiError(401, 'authentication_error', `${verdict.message}.`, null, 'invalid_api_key'));
        return;
      }
    }
    const pool = this.ctx.directory.pool(model);
    if (pool === undefined) {
      this.fail(modelNotFound(model, this.visibleModels()));
      return;
    }
    this.pool = pool;
    if (pool.readyCount === 0) {
      this.fail(this.noReplica(pool), { 'retry-after': '5' });
      return;
    }
    const limits = key?.limits;
    if (limits === undefined) {
      this.route();
      return;
    }
    const tokens = limits.tokensPerMinute
      ? estimatePromptTokens(request.parsed) + completionBudget(request.parsed, this.ctx.config.RATE_LIMIT_DEFAULT_COMPLETION_TOKENS)
      : 0;
    this.ctx.limiter.check(this.principal.keyId, model, limits, tokens).then(
      (result) => this.afterRateLimit(result, tokens),
      (err: unknown) => this.rateLimitUnavailable(err),
    );
  }

  /** Fails the exchange from outside (bad body, draining). */
  reject(error: ApiError, headers?: OutgoingHttpHeaders): void {
    this.fail(error, headers);
  }

  // ---------------------------------------------------------------- admission

  private visibleModels(): string[] {
    const key = this.principal.key;
    const all = this.ctx.directory.models;
    if (key === undefined || key.models === '*') return [...all];
    const allowed = key.models;
    return all.filter((m) => allowed.includes(m));
  }

  private noReplica(pool: ReplicaPool): ApiError {
    const deployments = pool.deployments.join(', ');
    // A disaggregated deployment's decode replicas wait for a Ready prefill replica.
    const prefill = pool.prefillDesired > 0 ? ` (prefill role: ${pool.prefillReady} of ${pool.prefillDesired} ready)` : '';
    return serviceUnavailable(
      `No ready replica of model \`${pool.model}\`: deployment ${deployments} has ${pool.readyCount} of ${pool.desired} replicas ready${prefill}; retry shortly.`,
    );
  }

  private afterRateLimit(result: RateLimitResult, tokens: number): void {
    // An allowed check reserved `tokens`: settled when the request ends, or at once if it did.
    if (result.allowed) this.reservedTokens = tokens;
    if (this.finished) {
      if (this.reservedTokens > 0) this.settle(0);
      return;
    }
    this.rateStanding = result;
    if (result.allowed) {
      this.route();
      return;
    }
    const model = this.request?.model ?? '';
    this.ctx.metrics.limited(model, result.limitedBy);
    const key = this.principal.key;
    if (result.reason === 'exceeds_limit') {
      const limit = key?.limits?.tokensPerMinute ?? 0;
      this.fail(
        new ApiError(
          429,
          'rate_limit_error',
          `This request needs more tokens than API key ${this.principal.keyId} may use per minute on \`${model}\` (limit ${limit}); lower max_tokens or shorten the prompt.`,
          null,
          'tokens_exceed_limit',
        ),
        this.rateHeaders(),
      );
      return;
    }
    const seconds = Math.max(1, Math.ceil(result.retryAfterMs / 1000));
    const limit = result.limitedBy === 'requests' ? `${key?.limits?.requestsPerMinute} requests` : `${key?.limits?.tokensPerMinute} tokens`;
    const error = rateLimited(`Rate limit of API key ${this.principal.keyId} on \`${model}\` reached (${limit} per minute); retry in ${seconds} s.`);
    this.fail(error, { ...this.rateHeaders(), 'retry-after': String(seconds) });
  }

  private rateLimitUnavailable(err: unknown): void {
    if (this.finished) return;
    this.ctx.metrics.redisError('rate_limit');
    if (!(err instanceof RateLimitUnavailableError)) this.ctx.logger.error({ err }, `rate limit check failed: ${(err as Error).message}`);
    if (this.ctx.config.RATE_LIMIT_FAIL_OPEN) {
      if (this.ctx.limiter.shouldLogUnavailable()) {
        this.ctx.logger.warn({ err: (err as Error).message }, `rate limits not checked: ${(err as Error).message}; RATE_LIMIT_FAIL_OPEN lets requests through (logged at most every 10 s)`);
      }
      this.route();
      return;
    }
    this.fail(serviceUnavailable('Rate limits cannot be checked right now (Redis unavailable); retry shortly.'), { 'retry-after': '1' });
  }

  private rateHeaders(): OutgoingHttpHeaders {
    const standing = this.rateStanding;
    const headers: OutgoingHttpHeaders = {};
    if (standing?.requests) {
      headers['x-ratelimit-remaining-requests'] = String(standing.requests.remaining);
      headers['x-ratelimit-reset-requests'] = `${Math.ceil(standing.requests.resetMs / 1000)}s`;
    }
    if (standing?.tokens) {
      headers['x-ratelimit-remaining-tokens'] = String(standing.tokens.remaining);
      headers['x-ratelimit-reset-tokens'] = `${Math.ceil(standing.tokens.resetMs / 1000)}s`;
    }
    return headers;
  }

  // ---------------------------------------------------------------- routing and attempts

  private route(): void {
    const request = this.request as InferenceRequest;
    const pool = this.pool as ReplicaPool;
    const sessionHeader = this.res.req.headers[this.ctx.config.SESSION_HEADER];
    const sessionKey = typeof sessionHeader === 'string' && sessionHeader !== '' ? sessionHeader : 'user' in request.parsed ? request.parsed.user : undefined;
    this.routeRequest = { model: request.model, text: this.ctx.cacheAware ? promptText(request.parsed) : '', sessionKey };
    this.plan = new RetryPlan(pool.policy, this.routeRequest, { maxAttempts: this.ctx.config.RETRY_MAX_ATTEMPTS });
    this.withdraw = pool.whenAvailable(
      () => this.firstAttempt(),
      (reason) => this.noCapacity(reason),
    );
  }

  private noCapacity(reason: AcquireFailure): void {
    this.withdraw = undefined;
    const pool = this.pool as ReplicaPool;
    if (reason === 'no_replica') this.fail(this.noReplica(pool), { 'retry-after': '5' });
    else if (reason === 'queue_full') {
      this.fail(serviceUnavailable(`Every replica of \`${pool.model}\` is busy and ${pool.queued} requests are waiting already; retry shortly.`), { 'retry-after': '1' });
    } else {
      this.fail(
        serviceUnavailable(`Every replica of \`${pool.model}\` stayed busy for ${this.ctx.config.QUEUE_TIMEOUT_S} s (QUEUE_TIMEOUT_S); retry shortly.`),
        { 'retry-after': '1' },
      );
    }
  }

  private firstAttempt(): void {
    this.withdraw = undefined;
    if (this.finished) return;
    const pool = this.pool as ReplicaPool;
    const replica = this.plan?.first(pool.replicas) as Replica | undefined;
    if (replica === undefined) {
      this.fail(this.noReplica(pool), { 'retry-after': '5' });
      return;
    }
    this.send(replica);
  }

  private send(replica: Replica): void {
    (this.pool as ReplicaPool).acquire(replica);
    this.held = replica;
    this.lastReplica = replica;
    const prefill = replica.prefill;
    if (prefill !== undefined && prefill !== this.prefilledBy && this.api !== 'embeddings') {
      // A decode replica, held while its deployment's prefill replica computes the prompt's KV.
      this.startPrefill(replica, prefill);
      return;
    }
    this.dispatch(replica);
  }

  /** Sends the request to the held `replica`. */
  private dispatch(replica: Replica): void {
    const request = this.request as InferenceRequest;
    this.upStatus = undefined;
    const body = replica.prefill !== undefined && this.decodeBody !== undefined ? this.decodeBody : request.upstreamBody;
    const traceparent = this.res.req.headers.traceparent;
    const accept = request.stream ? 'text/event-stream' : 'application/json';
    const headers = engineRequestHeaders(accept, this.requestId, this.ctx.config.UPSTREAM_API_KEY, typeof traceparent === 'string' ? traceparent : undefined);
    const call = replica.upstream.prepare(this);
    this.call = call;
    call.send({ path: PATHS[this.api], headers, body });
  }

  // ---------------------------------------------------------------- disaggregated prefill/decode

  private startPrefill(decode: Replica, pool: ReplicaPool): void {
    const request = this.request as InferenceRequest;
    const traceparent = this.res.req.headers.traceparent;
    // The decode request is the upstream body (with the usage a stream must report) plus what
    // the prefill engine answers; parsed once, for disaggregated requests only.
    const body = JSON.parse(request.upstreamBody.toString('utf8')) as Record<string, unknown>;
    this.prefill = new PrefillStep(
      this.ctx,
      pool,
      { path: PATHS[this.api], body, route: this.routeRequest as RouteRequest, requestId: this.requestId, traceparent: typeof traceparent === 'string' ? traceparent : undefined },
      {
        done: (result) => this.afterPrefill(decode, pool, body, result),
        failed: (error, headers) => {
          this.prefill = undefined;
          this.dropHeld();
          this.fail(error, headers);
        },
        refused: (status, headers, answer, replicaName) => {
          this.prefill = undefined;
          this.dropHeld();
          this.relayRefusal(status, headers, answer, replicaName);
        },
      },
    );
    this.prefill.start();
  }

  private afterPrefill(decode: Replica, pool: ReplicaPool, body: Record<string, unknown>, result: PrefillResult): void {
    this.prefill = undefined;
    if (this.finished) return;
    this.prefilledBy = pool;
    this.prefillReplicaName = result.replicaName;
    this.decodeBody = decodeRequestBody(body, result.kvTransferParams);
    this.dispatch(decode);
  }

  /** Gives back the held replica without counting an attempt (none was made on it). */
  private dropHeld(): void {
    const replica = this.held;
    if (replica === undefined) return;
    this.held = undefined;
    (this.pool as ReplicaPool).release(replica);
  }

  /** A prefill engine's 4xx, to the client as the engine wrote it. */
  private relayRefusal(status: number, headers: OutgoingHttpHeaders, body: Buffer, replicaName: string): void {
    if (this.finished) return;
    headers['content-length'] = body.length;
    if (this.rateStanding !== undefined) Object.assign(headers, this.rateHeaders());
    headers['x-request-id'] = this.requestId;
    headers[PREFILL_REPLICA_HEADER] = replicaName;
    if (!this.res.headersSent && !this.res.destroyed) {
      this.res.writeHead(status, headers);
      this.res.end(body);
    }
    this.bufferedStatus = status;
    this.complete('ok');
  }

  /** Gives the held replica back, counting how its attempt ended. */
  private releaseReplica(result: AttemptResult): void {
    const replica = this.held;
    if (replica === undefined) return;
    this.held = undefined;
    const pool = this.pool as ReplicaPool;
    pool.health.record(replica.id, attemptOutcome(result));
    this.ctx.metrics.attempt(result);
    pool.release(replica);
  }

  // ---------------------------------------------------------------- the engine's answer (UpstreamHandler)

  onError(error: UpstreamError): void {
    if (this.finished) return;
    const replica = this.held;
    const name = replica?.id ?? 'replica';
    if (this.errorChunks !== undefined) {
      // The connection broke while a 5xx body was coming: report what there is.
      this.endErrorAnswer();
      return;
    }
    if (this.upStatus !== undefined) {
      // The engine went away mid-answer: what the client has cannot be taken back, so no retry.
      const message = `${name} closed the connection mid-answer`;
      this.ctx.logger.warn({ requestId: this.requestId, replica: replica?.id, err: error.message }, message);
      this.abortClient(upstreamFailed(`The model server failed: ${message}.`));
      this.complete('connect_error');
      return;
    }
    if (replica !== undefined && error.failure === 'reset' && !this.resent) {
      // The connection closed before any answer, most often an idle keep-alive connection the
      // engine closed as we reused it: nothing was answered and the replica may well be fine.
      // Send again to the same replica, once, without counting a failure.
      this.resent = true;
      this.held = undefined;
      this.call = undefined;
      (this.pool as ReplicaPool).release(replica);
      this.send(replica);
      return;
    }
    this.attemptFailed('connect_error', `${name}: ${error.message}`, true);
  }

  /** An attempt failed before anything was relayed; retry elsewhere when allowed. */
  private attemptFailed(result: AttemptResult, message: string, retriable: boolean): void {
    const replica = this.held as Replica;
    this.releaseReplica(result);
    this.call = undefined;
    this.upStatus = undefined;
    this.lastFailureWasUnavailable = result === 'unavailable';
    const pool = this.pool as ReplicaPool;
    if (retriable && this.plan !== undefined) {
      pool.refresh();
      const decision = this.plan.afterFailure({ replicaId: replica.id, afterFirstByte: false }, pool.replicas);
      if (decision.retry) {
        this.ctx.metrics.retry(pool.model);
        this.send(decision.replica as Replica);
        return;
      }
    }
    const attempts = this.plan?.attempts ?? 1;
    const tried = attempts > 1 ? ` (tried ${attempts} replicas)` : '';
    if (this.lastFailureWasUnavailable) {
      this.fail(serviceUnavailable(`No replica of \`${pool.model}\` could take the request${tried}; last: ${message}`), { 'retry-after': '1' });
    } else {
      this.fail(upstreamFailed(`The model server failed${tried}: ${message}`));
    }
  }

  onResponse(status: number, headers: Record<string, string | string[]>): void {
    if (this.finished) return;
    this.firstByteAt = performance.now();
    this.upStatus = status;
    if (status >= 500) {
      // Nothing has gone to the client: a 503 (loading, draining, overloaded) is retried on
      // another replica; other 5xx become a 502 that quotes the engine.
      this.errorChunks = [];
      this.errorSize = 0;
      return;
    }
    this.relayResponse(status, headers);
  }

  onData(chunk: Buffer): boolean {
    if (this.finished) return false;
    if (this.errorChunks !== undefined) {
      if (this.errorSize < ERROR_BODY_BYTES) this.errorChunks.push(chunk);
      this.errorSize += chunk.length;
      return true;
    }
    let out: Buffer | undefined;
    if (this.relay !== undefined) {
      try {
        out = this.relay.push(chunk);
      } catch (err) {
        if (!(err instanceof SseEventTooLarge)) throw err;
        this.cutOversizedStream(err);
        return false;
      }
      if (out.length === 0) return true;
      // Events of one read from the engine leave in one write.
      if (!this.corked) {
        this.corked = true;
        this.res.cork();
        process.nextTick(uncork, this);
      }
    } else {
      this.tail?.push(chunk);
      out = this.lastChunk;
      this.lastChunk = chunk;
      if (out === undefined) return true;
    }
    if (this.res.write(out)) return true;
    if (!this.paused) {
      this.paused = true;
      this.res.once('drain', () => {
        this.paused = false;
        if (!this.finished) this.call?.resume();
      });
    }
    return false;
  }

  /** Undoes the cork of `onData` once the events of one read are written. */
  uncork(): void {
    this.corked = false;
    this.res.uncork();
  }

  onEnd(): void {
    if (this.finished) return;
    if (this.errorChunks !== undefined) {
      this.endErrorAnswer();
      return;
    }
    const rest = this.relay !== undefined ? this.relay.end() : this.lastChunk;
    this.lastChunk = undefined;
    if (rest !== undefined && rest.length > 0) this.res.end(rest);
    else this.res.end();
    this.complete('ok');
  }

  /** A 5xx answer ended (or broke off): retry a 503 elsewhere, report the others. */
  private endErrorAnswer(): void {
    const chunks = this.errorChunks as Buffer[];
    const size = Math.min(this.errorSize, ERROR_BODY_BYTES);
    this.errorChunks = undefined;
    const status = this.upStatus as number;
    const message = `${(this.held as Replica).id} answered ${status}: ${engineMessage(Buffer.concat(chunks).toString('utf8', 0, size))}`;
    if (status === 503) this.attemptFailed('unavailable', message, true);
    else this.attemptFailed('server_error', message, false);
  }

  private relayResponse(status: number, upstreamHeaders: Record<string, string | string[]>): void {
    const request = this.request as InferenceRequest;
    const headers: OutgoingHttpHeaders = upstreamHeaders;
    const contentType = upstreamHeaders['content-type'];
    const sse = request.stream && typeof contentType === 'string' && contentType.startsWith('text/event-stream');
    if (sse) {
      this.relay = new SseRelay(request.clientWantsUsage, this.ctx.config.MAX_SSE_EVENT_KIB * 1024);
      delete headers['content-length'];
    } else if (status < 300) {
      this.tail = new BodyTail();
    }
    if (this.rateStanding !== undefined) Object.assign(headers, this.rateHeaders());
    headers['x-request-id'] = this.requestId;
    if (this.prefillReplicaName !== undefined) {
      headers[PREFILL_REPLICA_HEADER] = this.prefillReplicaName;
      const named = upstreamHeaders['x-gpufleet-replica'];
      headers[DECODE_REPLICA_HEADER] = typeof named === 'string' && named !== '' ? named : (this.held as Replica).id;
    }
    // Headers go out with the first body bytes, so time to first byte stays the engine's.
    this.res.writeHead(status, headers);
  }

  /** The engine sent an event past MAX_SSE_EVENT_KIB: stop it, end the client's stream with an error event. */
  private cutOversizedStream(err: SseEventTooLarge): void {
    const replica = (this.held as Replica | undefined)?.id ?? 'replica';
    this.ctx.logger.warn({ requestId: this.requestId, replica }, `${replica}: ${err.message} (MAX_SSE_EVENT_KIB); stream cut`);
    this.ctx.metrics.oversizedEvent();
    this.withdraw?.();
    this.call?.cancel();
    this.abortClient(upstreamFailed(`The model server sent an event of more than ${Math.round(err.limitBytes / 1024)} KiB (MAX_SSE_EVENT_KIB); the stream was cut.`));
    this.complete('server_error');
  }

  /** Ends a response that has started: an error event for a stream, a cut connection otherwise. */
  private abortClient(error: ApiError): void {
    if (this.res.writableEnded) return;
    if (this.relay !== undefined) this.res.end(streamErrorEvent(error));
    else this.res.destroy();
  }

  // ---------------------------------------------------------------- endings

  private onClientClose(): void {
    if (this.finished || this.res.writableFinished) return;
    // The client went away: stop the engine's work too.
    this.call?.cancel();
    this.withdraw?.();
    if (this.prefill !== undefined) {
      this.prefill.cancel('cancelled');
      this.prefill = undefined;
      this.dropHeld();
    }
    this.complete('cancelled');
  }

  private onTimeout(): void {
    this.timer = undefined;
    if (this.finished) return;
    const seconds = this.ctx.config.REQUEST_TIMEOUT_S;
    this.withdraw?.();
    this.call?.cancel();
    if (this.prefill !== undefined) {
      // The prefill replica timed out; the decode replica was only held.
      this.prefill.cancel('timeout');
      this.prefill = undefined;
      this.dropHeld();
    }
    if (!this.res.headersSent) {
      this.releaseReplica('timeout');
      this.fail(gatewayTimeout(`The model server did not answer within ${seconds} s (REQUEST_TIMEOUT_S).`));
      return;
    }
    this.abortClient(gatewayTimeout(`The answer took longer than ${seconds} s (REQUEST_TIMEOUT_S).`));
    this.complete('timeout');
  }

  /** Answers an error (or ends a started stream with one) and finishes. */
  private fail(error: ApiError, headers?: OutgoingHttpHeaders): void {
    if (this.finished) return;
    this.releaseReplica('cancelled');
    const extra: OutgoingHttpHeaders = { 'x-request-id': this.requestId };
    if (headers) Object.assign(extra, headers);
    if (!this.res.headersSent && !this.res.destroyed) sendError(this.res, error, extra);
    if (this.reservedTokens > 0) this.settle(0);
    this.finish(error.status);
  }

  /** The relay ended (or was cut): count, meter, settle. */
  private complete(result: AttemptResult): void {
    if (this.finished) return;
    const status = this.upStatus ?? this.bufferedStatus;
    this.releaseReplica(result);
    if (status !== undefined) this.meter(status, result);
    else if (this.reservedTokens > 0) this.settle(0);
    this.finish(result === 'cancelled' ? 499 : (status ?? 502));
  }

  private finish(status: number): void {
    this.finished = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.ctx.metrics.request(this.api, this.pool?.model ?? '', status);
    this.ctx.onDone();
  }

  private meter(status: number, result: AttemptResult): void {
    const request = this.request as InferenceRequest;
    const replica = this.lastReplica as Replica;
    const now = performance.now();
    let usage: TokenUsage | undefined;
    let estimated = false;
    if (status < 300) {
      usage = this.relay?.usage ?? this.tail?.usage();
      if (usage === undefined) {
        estimated = true;
        usage = { promptTokens: estimatePromptTokens(request.parsed), cachedTokens: 0, completionTokens: this.estimateCompletion() };
      }
    }
    const record: UsageRecord = {
      requestId: this.requestId,
      keyId: this.principal.keyId,
      model: request.model,
      deployment: replica.deployment,
      replica: replica.id,
      api: this.api,
      promptTokens: usage?.promptTokens ?? 0,
      cachedTokens: usage?.cachedTokens ?? 0,
      completionTokens: usage?.completionTokens ?? 0,
      estimated,
      status: result === 'cancelled' ? 499 : status,
      stream: request.stream,
      startedAt: new Date(this.startedWallMs),
      durationMs: now - this.startedAt,
      firstByteMs: this.firstByteAt > 0 ? this.firstByteAt - this.startedAt : 0,
    };
    this.ctx.meter.record(record);
    this.ctx.metrics.proxied(this.api, request.model, (now - this.startedAt) / 1000, this.firstByteAt > 0 ? (this.firstByteAt - this.startedAt) / 1000 : undefined);
    if (this.reservedTokens > 0) this.settle(record.promptTokens + record.completionTokens);
  }

  private estimateCompletion(): number {
    const request = this.request as InferenceRequest;
    if (this.api === 'embeddings') return 0;
    if (this.relay !== undefined) {
      // One content event per token, less the role event each chat choice starts with.
      const choices = 'n' in request.parsed ? request.parsed.n : 1;
      return Math.max(0, this.relay.contentEvents - (this.api === 'chat.completions' ? choices : 0));
    }
    return this.tail === undefined ? 0 : estimateCompletionTokens(this.tail);
  }

  private settle(usedTokens: number): void {
    const reserved = this.reservedTokens;
    this.reservedTokens = 0;
    const key = this.principal.key;
    const model = this.request?.model ?? '';
    this.ctx.limiter.settle(this.principal.keyId, model, key?.limits, reserved, usedTokens).catch((err: unknown) => {
      this.ctx.metrics.redisError('rate_limit_settle');
      this.ctx.logger.debug({ err }, `rate limit settlement failed: ${(err as Error).message}`);
    });
  }
}
