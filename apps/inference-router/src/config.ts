import { hostname } from 'node:os';
import {
  bool,
  type ConfigOf,
  type ConfigProblem,
  loadConfig,
  loadConfigOrExit,
  defineConfig,
  duration,
  FieldParseError,
  type FieldSpec,
  file,
  int,
  port,
  sharedConfigFields,
  str,
  url,
} from '@gpufleet/config';
import { CACHE_AWARE_DEFAULTS, ROUTING_POLICY_NAMES } from '@gpufleet/routing-core';

interface NumOptions {
  readonly desc: string;
  readonly default: number;
  readonly min: number;
  readonly max?: number;
}

const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** A decimal number (the config library has integers and durations only). */
function num(options: NumOptions): FieldSpec<number> {
  const expected = options.max === undefined ? `a number >= ${options.min}` : `a number ${options.min}-${options.max}`;
  return Object.freeze({
    type: options.max === undefined ? `number >= ${options.min}` : `number ${options.min}-${options.max}`,
    expected,
    description: options.desc,
    defaultValue: options.default,
    hasDefault: true,
    required: false,
    secret: false,
    // A number is never a credential, whatever its name (PREFILL_US_PER_TOKEN).
    notSecret: true,
    requires: [],
    conflicts: [],
    parse(raw: string): number {
      if (!DECIMAL.test(raw)) throw new FieldParseError(expected);
      const value = Number(raw);
      if (!Number.isFinite(value) || value < options.min || (options.max !== undefined && value > options.max)) throw new FieldParseError(expected);
      return value;
    },
  });
}

/** The host name as a router replica's name (usage events, logs). */
export function defaultRouterName(host: string = hostname()): string {
  const name = host.replace(/[^A-Za-z0-9_.-]/g, '-').slice(0, 128);
  return name.length > 0 ? name : 'inference-router';
}

const HEADER_NAME = /^[a-z0-9!#$%&'*+.^_`|~-]+$/;

/** The inference router's variables (docs/router.md#configuration). */
const routerConfigFields = {
  ...sharedConfigFields,
  GRPC_PORT: port({ default: 50055, desc: 'Port of the gRPC server (KeyService, health, reflection).' }),
  HTTP_PORT: port({ default: 8000, desc: 'Port of the OpenAI-compatible API (/v1/*); also answers /healthz and /readyz.' }),
  OPS_PORT: port({ default: 8085, desc: 'Port of the operations server: /healthz, /readyz, /metrics.' }),
  HOST: str({ default: '127.0.0.1', desc: 'Address the API, operations and gRPC servers listen on: loopback by default, 0.0.0.0 (what the image sets) for every address.' }),
  API_TLS_CERT_FILE: file({ optional: true, requires: ['API_TLS_KEY_FILE'], desc: 'Certificate chain (PEM) of the OpenAI API: when set, HTTP_PORT speaks HTTPS only.' }),
  API_TLS_KEY_FILE: file({ optional: true, requires: ['API_TLS_CERT_FILE'], desc: 'Private key (PEM) of API_TLS_CERT_FILE.' }),
  ROUTER_NAME: str({
    default: defaultRouterName(),
    pattern: /^[A-Za-z0-9_.-]{1,128}$/,
    patternDesc: 'a name of A-Z, a-z, 0-9, ".", "_" and "-" (at most 128 characters)',
    desc: 'Name of this router replica in usage events and logs. Default: the host name.',
  }),

  REDIS_URL: url({
    default: 'redis://127.0.0.1:6379',
    protocols: ['redis', 'rediss'],
    desc: 'Redis for rate limits and usage counters, shared by every router replica; rediss:// for TLS. Put the password in REDIS_PASSWORD, not here.',
  }),
  REDIS_PASSWORD: str({ optional: true, secret: true, desc: 'Redis password (AUTH).' }),
  REDIS_TIMEOUT_S: duration({
    default: 0.5,
    min: 0.01,
    desc: 'How long a Redis command may take before the router gives up on it (rate-limit checks follow RATE_LIMIT_FAIL_OPEN).',
  }),

  AUTH_REQUIRED: bool({
    default: true,
    desc: 'Require an API key (Authorization: Bearer gpufleet_<id>_<secret>) on /v1/*. false: requests without a gpufleet key run as "anonymous" (local stack only).',
  }),
  RATE_LIMIT_FAIL_OPEN: bool({
    default: true,
    desc: 'When Redis cannot answer a rate-limit check: true lets the request through (and logs), false answers 503.',
  }),
  RATE_LIMIT_DEFAULT_COMPLETION_TOKENS: int({
    default: 256,
    min: 0,
    desc: 'Completion tokens reserved against a key’s tokens-per-minute for a request without max_tokens, settled against the real usage afterwards.',
  }),

  ROUTING_POLICY: str({
    default: 'cache_aware',
    choices: ROUTING_POLICY_NAMES,
    desc: 'How a replica is picked: round_robin, least_request, session (affinity by SESSION_HEADER), cache_aware (prefix-cache affinity with load balancing).',
  }),
  CACHE_THRESHOLD: num({
    default: CACHE_AWARE_DEFAULTS.cacheThreshold,
    min: 0,
    max: 1,
    desc: 'cache_aware: share of the prompt the best-matching replica must have seen for the request to follow it.',
  }),
  BALANCE_ABS_THRESHOLD: int({
    default: CACHE_AWARE_DEFAULTS.balanceAbsThreshold,
    min: 0,
    desc: 'cache_aware: load counts as unbalanced when the busiest replica has more than this many requests over the least busy (and BALANCE_REL_THRESHOLD times as many); requests: this router’s in flight plus other routers’ seen in the engine’s /metrics.',
  }),
  BALANCE_REL_THRESHOLD: num({
    default: CACHE_AWARE_DEFAULTS.balanceRelThreshold,
    min: 1,
    desc: 'cache_aware: see BALANCE_ABS_THRESHOLD.',
  }),
  PREFIX_CHARS_PER_REPLICA: int({
    default: CACHE_AWARE_DEFAULTS.maxCharsPerReplica,
    min: 1,
    desc: 'cache_aware: prompt characters remembered per replica and model; size it like one replica’s prefix cache.',
  }),
  SESSION_HEADER: str({
    default: 'x-session-id',
    pattern: HEADER_NAME,
    patternDesc: 'a lower-case HTTP header name',
    desc: 'session: the request header naming the session; without it the body’s "user" field is used, and without that least_request.',
  }),

  EJECT_CONSECUTIVE_FAILURES: int({ default: 3, min: 1, desc: 'Consecutive connect errors or 5xx answers that take a replica out of rotation.' }),
  EJECT_BASE_S: duration({ default: 5, min: 0.001, desc: 'First ejection’s length; each further ejection in a row doubles it.' }),
  EJECT_MAX_S: duration({ default: 60, min: 0.001, desc: 'Longest ejection.' }),
  RETRY_MAX_ATTEMPTS: int({
    default: 3,
    min: 1,
    max: 10,
    desc: 'Attempts per request, the first included, each on another replica; only failures before the engine’s first byte (or its 503) are retried.',
  }),
  REQUEST_TIMEOUT_S: duration({ default: 600, min: 0.001, desc: 'Longest time a request may take, queueing included; past it the client gets 504 (or, mid-stream, an error event).' }),
  CONNECT_TIMEOUT_S: duration({ default: 5, min: 0.001, desc: 'Longest time to open a connection to an engine; past it the attempt fails and is retried elsewhere.' }),
  MAX_INFLIGHT_PER_REPLICA: int({
    default: 0,
    min: 0,
    desc: 'Requests this router keeps in flight per replica at most; more wait in a bounded queue. 0: no limit (the engines queue).',
  }),
  QUEUE_MAX: int({ default: 1024, min: 0, desc: 'Requests per model that may wait for a replica when every replica is at MAX_INFLIGHT_PER_REPLICA; more get 503.' }),
  QUEUE_TIMEOUT_S: duration({ default: 30, min: 0.001, desc: 'Longest wait in that queue before a 503.' }),
  ENGINE_METRICS_INTERVAL_S: duration({
    default: 1,
    min: 0,
    desc: 'How often the router reads every replica’s /metrics (requests running and waiting, KV cache use) to see the load other router replicas put there; a sample not renewed for 3 intervals is dropped. 0: never, policies see only this router’s in-flight counts.',
  }),
  ENGINE_METRICS_TIMEOUT_S: duration({ default: 1, min: 0.001, desc: 'Longest wait for one replica’s /metrics; one read per replica is in flight at most.' }),
  ENGINE_METRICS_MAX_KIB: int({ default: 1024, min: 1, desc: 'Largest /metrics body read from one replica (KiB); a bigger or endless one is cut, counted and logged once per replica, and the replica is routed on this router’s in-flight count alone.' }),
  UPSTREAM_API_KEY: str({ optional: true, secret: true, desc: 'Sent to the engines as "Authorization: Bearer …" when they run with --api-key.' }),

  USAGE_FLUSH_S: duration({ default: 1, min: 0.01, desc: 'How often metered usage goes to Redis and NATS (usage events) and Prometheus.' }),
  USAGE_RETENTION_DAYS: int({ default: 400, min: 1, desc: 'Days the per-day usage counters are kept in Redis.' }),
  DRAIN_TIMEOUT_S: duration({ default: 30, min: 0, desc: 'On SIGTERM, how long in-flight requests may take to finish before the router exits anyway.' }),

  // Bounds of the OpenAI API: no client and no engine can hold the router's memory or sockets.
  HEADERS_TIMEOUT_S: duration({ default: 30, min: 0.1, desc: 'Longest time a client may take to send a request’s headers; past it the connection gets 408 and is closed.' }),
  BODY_TIMEOUT_S: duration({ default: 60, min: 0.1, desc: 'Longest time a client may take to send a whole request (headers and body); past it 408 and the connection closes. Streamed answers are not limited by it.' }),
  IDLE_TIMEOUT_S: duration({ default: 65, min: 0.1, desc: 'How long a kept-alive connection may sit idle between requests before the router closes it.' }),
  MAX_CONNECTIONS: int({ default: 4096, min: 1, desc: 'Client connections open at once; one more is closed as soon as it is accepted.' }),
  MAX_IN_FLIGHT: int({ default: 2048, min: 1, desc: 'Inference requests in flight at once (all models); one more gets 503 with Retry-After: 1.' }),
  MAX_SSE_EVENT_KIB: int({ default: 1024, min: 1, desc: 'Largest single SSE event an engine may send (KiB); a stream with a bigger one is cut with an error event, so an endless event cannot hold the router’s memory.' }),
} as const;

export type RouterConfig = ConfigOf<typeof routerConfigFields>;

/** The schema, with the rules between variables (routerConfigProblems) as its checks. */
export const routerConfigSchema = defineConfig(routerConfigFields, [(config) => routerConfigProblems(config)]);

/** Injection token of the validated configuration. */
export const ROUTER_CONFIG = Symbol('ROUTER_CONFIG');

/** Problems between variables that each parse fine on their own. */
export function routerConfigProblems(config: RouterConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  if (config.EJECT_MAX_S < config.EJECT_BASE_S) {
    problems.push({ variable: 'EJECT_MAX_S', message: `must be at least EJECT_BASE_S (${config.EJECT_BASE_S}), got ${config.EJECT_MAX_S}` });
  }
  if (config.ENGINE_METRICS_INTERVAL_S > 0 && config.ENGINE_METRICS_INTERVAL_S < 0.05) {
    problems.push({ variable: 'ENGINE_METRICS_INTERVAL_S', message: `must be 0 (off) or at least 0.05 s, so as not to flood the engines, got ${config.ENGINE_METRICS_INTERVAL_S}` });
  }
  const ports: [string, number][] = [
    ['HTTP_PORT', config.HTTP_PORT],
    ['OPS_PORT', config.OPS_PORT],
    ['GRPC_PORT', config.GRPC_PORT],
  ];
  for (let i = 0; i < ports.length; i++) {
    for (let j = i + 1; j < ports.length; j++) {
      if (ports[i][1] === ports[j][1]) problems.push({ variable: ports[j][0], message: `must differ from ${ports[i][0]} (both ${ports[i][1]})` });
    }
  }
  return problems;
}

/** Loads and checks the configuration; throws ConfigError naming every bad variable. */
export function loadRouterConfig(env: Readonly<Record<string, string | undefined>> = process.env): RouterConfig {
  return loadConfig(routerConfigSchema, env);
}

/** For main: the configuration, or the problems on stderr and exit 78. */
export function loadRouterConfigOrExit(): RouterConfig {
  return loadConfigOrExit(routerConfigSchema);
}
