/**
 * The prefill half of a request to a disaggregated (prefill/decode) deployment, as vLLM's
 * disaggregated serving with a KV connector does it (NixlConnector; the protocol of vLLM's
 * `tests/v1/kv_connector/nixl_integration/toy_proxy_server.py`):
 *
 * 1. the request goes to a prefill replica as a non-streamed one-token request carrying
 *    `kv_transfer_params: {"do_remote_decode": true, …nulls}` (`prefillRequestBody`);
 * 2. the prefill engine computes the prompt's KV, keeps it, and answers with the
 *    `kv_transfer_params` a decode engine needs to pull it (`do_remote_prefill: true`, its engine
 *    id, block ids, side-channel host and port);
 * 3. the client's request goes to a decode replica with those parameters added
 *    (`decodeRequestBody`), and its answer is the client's.
 *
 * This class runs step 1-2 on the prefill replicas of one deployment: the routing policy picks
 * one, failures before an answer (connection errors, 5xx, an answer without
 * `kv_transfer_params`) are retried on another as the retry plan allows and count for passive
 * health, a 4xx (the request itself is wrong) is handed back to go to the client as it is. The
 * prefill answer's one token and usage are dropped: the client pays for the decode answer only.
 */
import type { OutgoingHttpHeaders } from 'node:http';
import { remoteDecodeRequestParams, serviceUnavailable, type ApiError } from '@gpufleet/openai-protocol';
import { RetryPlan, type RouteRequest } from '@gpufleet/routing-core';
import type { Replica, ReplicaPool, AcquireFailure } from '../deployments/replica-pool';
import type { AttemptResult } from '../metrics/router-metrics';
import type { RouterContext } from './exchange';
import { attemptOutcome, engineMessage, upstreamFailed } from './http-kit';
import { engineRequestHeaders, type UpstreamCall, type UpstreamError, type UpstreamHandler } from './upstream';

/** Bytes of a prefill answer read: one token, its usage and the block ids, far below this. */
const MAX_PREFILL_ANSWER_BYTES = 8 * 1024 * 1024;

/** The engine names itself in this header (engine-sim does); the router's endpoint id otherwise. */
const ENGINE_REPLICA_HEADER = 'x-gpufleet-replica';

/**
 * The prefill request: the client's body as a non-streamed one-token request for a remote
 * decode. As vLLM's proxy does: `max_tokens` 1 (and `max_completion_tokens` when present),
 * `stream` false without `stream_options`, and no `min_tokens`/`min_completion_tokens` (which
 * could exceed the one token).
 */
export function prefillRequestBody(request: Readonly<Record<string, unknown>>): Buffer {
  const body: Record<string, unknown> = { ...request, kv_transfer_params: remoteDecodeRequestParams(), stream: false, max_tokens: 1 };
  if ('max_completion_tokens' in body) body.max_completion_tokens = 1;
  delete body.stream_options;
  delete body.min_tokens;
  delete body.min_completion_tokens;
  return Buffer.from(JSON.stringify(body));
}

/** The decode request: the client's body (streamed or not, as asked) with the prefill engine's `kv_transfer_params`. */
export function decodeRequestBody(request: Readonly<Record<string, unknown>>, kvTransferParams: Readonly<Record<string, unknown>>): Buffer {
  return Buffer.from(JSON.stringify({ ...request, kv_transfer_params: kvTransferParams }));
}

/**
 * The `kv_transfer_params` object of a prefill answer's body, or a sentence saying why there is
 * none.
 */
export function kvTransferParamsOf(body: string): Record<string, unknown> | string {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return 'answered a body that is not JSON';
  }
  const params = typeof json === 'object' && json !== null ? (json as Record<string, unknown>).kv_transfer_params : undefined;
  if (typeof params === 'object' && params !== null && !Array.isArray(params)) return params as Record<string, unknown>;
  return (
    'answered without kv_transfer_params: the engine must run with a KV connector ' +
    `(vLLM: --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}')`
  );
}

export interface PrefillResult {
  /** What the decode request carries. */
  readonly kvTransferParams: Record<string, unknown>;
  readonly replica: Replica;
  /** The prefill engine as it names itself (`x-gpufleet-replica`), else its endpoint. */
  readonly replicaName: string;
}

export interface PrefillHandlers {
  done(result: PrefillResult): void;
  /** No prefill replica could do it (all failed, none available): answer `error`. */
  failed(error: ApiError, headers?: OutgoingHttpHeaders): void;
  /** The prefill engine refused the request (a 4xx, say the prompt is too long): that answer goes to the client. */
  refused(status: number, headers: OutgoingHttpHeaders, body: Buffer, replicaName: string): void;
}

export interface PrefillRequest {
  /** `/v1/chat/completions` or `/v1/completions`. */
  readonly path: string;
  /** The client's body as the engine should see it (JSON object). */
  readonly body: Readonly<Record<string, unknown>>;
  /** For the routing policy: model, prompt text, session. */
  readonly route: RouteRequest;
  readonly requestId: string;
  readonly traceparent: string | undefined;
}

export class PrefillStep implements UpstreamHandler {
  private readonly plan: RetryPlan;
  private readonly body: Buffer;
  private held: Replica | undefined;
  private call: UpstreamCall | undefined;
  /** The answer of the current attempt, as it arrives. */
  private status = 0;
  private headers: Record<string, string | string[]> = {};
  private chunks: Buffer[] = [];
  private size = 0;
  private withdraw: (() => void) | undefined;
  private resent = false;
  private over = false;
  private lastWasUnavailable = false;

  constructor(
    private readonly ctx: RouterContext,
    private readonly pool: ReplicaPool,
    private readonly request: PrefillRequest,
    private readonly handlers: PrefillHandlers,
  ) {
    this.plan = new RetryPlan(pool.policy, request.route, { maxAttempts: ctx.config.RETRY_MAX_ATTEMPTS });
    this.body = prefillRequestBody(request.body);
  }

  /** Waits for a prefill replica below its in-flight cap (the bounded queue), then sends. */
  start(): void {
    this.withdraw = this.pool.whenAvailable(
      () => this.firstAttempt(),
      (reason) => this.noCapacity(reason),
    );
  }

  /** Stops the step (client gone, request timed out); no handler is called. */
  cancel(result: 'cancelled' | 'timeout'): void {
    if (this.over) return;
    this.over = true;
    this.withdraw?.();
    this.withdraw = undefined;
    const call = this.call;
    this.call = undefined;
    call?.cancel();
    this.release(result);
  }

  private firstAttempt(): void {
    this.withdraw = undefined;
    if (this.over) return;
    const replica = this.plan.first(this.pool.replicas) as Replica | undefined;
    if (replica === undefined) {
      this.noCapacity('no_replica');
      return;
    }
    this.send(replica);
  }

  private noCapacity(reason: AcquireFailure): void {
    this.withdraw = undefined;
    if (this.over) return;
    const pool = this.pool;
    const deployment = pool.deployments.join(', ');
    let message: string;
    if (reason === 'no_replica') {
      message = `No ready prefill replica of model \`${pool.model}\`: deployment ${deployment} has ${pool.readyCount} of ${pool.desired} prefill replicas ready; retry shortly.`;
    } else if (reason === 'queue_full') {
      message = `Every prefill replica of \`${pool.model}\` (deployment ${deployment}) is busy and ${pool.queued} requests are waiting already; retry shortly.`;
    } else {
      message = `Every prefill replica of \`${pool.model}\` (deployment ${deployment}) stayed busy for ${this.ctx.config.QUEUE_TIMEOUT_S} s (QUEUE_TIMEOUT_S); retry shortly.`;
    }
    this.end();
    this.handlers.failed(serviceUnavailable(message), { 'retry-after': reason === 'no_replica' ? '5' : '1' });
  }

  private send(replica: Replica): void {
    this.pool.acquire(replica);
    this.held = replica;
    this.status = 0;
    this.chunks = [];
    this.size = 0;
    const headers = engineRequestHeaders('application/json', this.request.requestId, this.ctx.config.UPSTREAM_API_KEY, this.request.traceparent);
    const call = replica.upstream.prepare(this);
    this.call = call;
    call.send({ path: this.request.path, headers, body: this.body });
  }

  // ---------------------------------------------------------------- the engine's answer (UpstreamHandler)

  onError(error: UpstreamError): void {
    if (this.over) return;
    const replica = this.held as Replica;
    if (this.status === 0 && error.failure === 'reset' && !this.resent) {
      // Most often an idle keep-alive connection the engine closed as we reused it: send again, once.
      this.resent = true;
      this.held = undefined;
      this.call = undefined;
      this.pool.release(replica);
      this.send(replica);
      return;
    }
    if (this.status !== 0) this.attemptFailed('connect_error', `${replica.id} closed the connection before its prefill answer was complete`);
    else this.attemptFailed('connect_error', `${replica.id}: ${error.message}`);
  }

  onResponse(status: number, headers: Record<string, string | string[]>): void {
    this.status = status;
    this.headers = headers;
  }

  onData(chunk: Buffer): boolean {
    if (this.over) return false;
    this.size += chunk.length;
    if (this.size > MAX_PREFILL_ANSWER_BYTES) {
      this.call?.cancel();
      this.attemptFailed('server_error', `${(this.held as Replica).id} answered the prefill with more than ${MAX_PREFILL_ANSWER_BYTES} bytes`);
      return false;
    }
    this.chunks.push(chunk);
    return true;
  }

  onEnd(): void {
    if (this.over) return;
    const replica = this.held as Replica;
    const status = this.status;
    const body = Buffer.concat(this.chunks, this.size);
    if (status >= 500) {
      this.attemptFailed(status === 503 ? 'unavailable' : 'server_error', `${replica.id} answered ${status}: ${engineMessage(body.toString('utf8', 0, Math.min(this.size, 4096)))}`);
      return;
    }
    const header = this.headers[ENGINE_REPLICA_HEADER];
    const replicaName = typeof header === 'string' && header !== '' ? header : replica.id;
    if (status >= 300) {
      // The request itself is wrong (the decode engine would refuse it alike): pass it on.
      this.release('ok');
      this.end();
      this.handlers.refused(status, { ...this.headers }, body, replicaName);
      return;
    }
    const params = kvTransferParamsOf(body.toString('utf8'));
    if (typeof params === 'string') {
      this.attemptFailed('server_error', `prefill replica ${replica.id} ${params}`);
      return;
    }
    this.release('ok');
    this.end();
    this.handlers.done({ kvTransferParams: params, replica, replicaName });
  }

  /** An attempt failed before anything reached the client: retry on another prefill replica when the plan allows. */
  private attemptFailed(result: AttemptResult, message: string): void {
    const replica = this.held as Replica;
    this.release(result);
    this.call = undefined;
    this.lastWasUnavailable = result === 'unavailable';
    this.pool.refresh();
    const decision = this.plan.afterFailure({ replicaId: replica.id, afterFirstByte: false }, this.pool.replicas);
    if (decision.retry) {
      this.ctx.metrics.retry(this.pool.model);
      this.send(decision.replica as Replica);
      return;
    }
    const attempts = this.plan.attempts;
    const tried = attempts > 1 ? ` (tried ${attempts} prefill replicas)` : '';
    this.end();
    if (this.lastWasUnavailable) {
      this.handlers.failed(serviceUnavailable(`No prefill replica of \`${this.pool.model}\` could take the request${tried}; last: ${message}`), { 'retry-after': '1' });
    } else {
      this.handlers.failed(upstreamFailed(`The prefill step failed${tried}: ${message}`));
    }
  }

  /** Gives the held prefill replica back, counting how its attempt ended. */
  private release(result: AttemptResult): void {
    const replica = this.held;
    if (replica === undefined) return;
    this.held = undefined;
    this.pool.health.record(replica.id, attemptOutcome(result));
    this.ctx.metrics.attempt(result);
    this.pool.release(replica);
  }

  private end(): void {
    this.over = true;
    this.call = undefined;
  }
}
