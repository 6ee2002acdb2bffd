import { hostname } from 'node:os';
import {
  bool,
  type ConfigOf,
  defineConfig,
  duration,
  FieldParseError,
  type FieldSpec,
  int,
  list,
  port,
  sharedConfigFields,
  str,
  url,
} from '@gpufleet/config';
import { ERROR_FORMATS } from '@gpufleet/openai-protocol';

/** A NATS subject token: the replica name ends up in `gpufleet.<cluster>.kv.events.<replica>`. */
const SUBJECT_TOKEN = /^[A-Za-z0-9_-]{1,128}$/;
const SUBJECT = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

interface NumOptions {
  readonly desc: string;
  readonly default: number;
  readonly min?: number;
  readonly max?: number;
}

/** A decimal number (the config library has integers and durations only). */
function num(options: NumOptions): FieldSpec<number> {
  const range =
    options.min !== undefined && options.max !== undefined
      ? ` ${options.min}-${options.max}`
      : options.min !== undefined
        ? ` >= ${options.min}`
        : options.max !== undefined
          ? ` <= ${options.max}`
          : '';
  const expected = `a number${range}`;
  return Object.freeze({
    type: `number${range}`,
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
      if (!/^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(raw)) throw new FieldParseError(expected);
      const value = Number(raw);
      if (!Number.isFinite(value)) throw new FieldParseError(expected);
      if (options.min !== undefined && value < options.min) throw new FieldParseError(expected);
      if (options.max !== undefined && value > options.max) throw new FieldParseError(expected);
      return value;
    },
  });
}

/** The host name as a NATS subject token: the default replica name. */
export function defaultReplicaName(host: string = hostname()): string {
  const token = host.replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 128);
  return token.length > 0 ? token : 'engine-sim';
}

const {
  GPUFLEET_CLUSTER,
  NATS_CREDS_FILE,
  NATS_NKEY_SEED_FILE,
  NATS_USER,
  NATS_PASSWORD,
  NATS_TOKEN,
  NATS_TLS_CA_FILE,
  NATS_TLS_CERT_FILE,
  NATS_TLS_KEY_FILE,
  LOG_LEVEL,
  OTEL_EXPORTER_OTLP_ENDPOINT,
  OTEL_SERVICE_NAME,
} = sharedConfigFields;

/**
 * The engine simulator's variables. Every one has a vLLM-like flag too (`cli.ts`); a flag wins
 * over its variable. No gRPC: an engine speaks HTTP only.
 */
export const engineSimConfigSchema = defineConfig({
  GPUFLEET_CLUSTER,
  NATS_URL: list({
    optional: true,
    of: url({ protocols: ['nats', 'tls'], desc: 'a NATS server' }),
    desc: 'NATS server URL(s), comma-separated. When set, KV cache events are published there; unset: no NATS at all.',
  }),
  NATS_CREDS_FILE,
  NATS_NKEY_SEED_FILE,
  NATS_USER,
  NATS_PASSWORD,
  NATS_TOKEN,
  NATS_TLS_CA_FILE,
  NATS_TLS_CERT_FILE,
  NATS_TLS_KEY_FILE,
  LOG_LEVEL,
  OTEL_EXPORTER_OTLP_ENDPOINT,
  OTEL_SERVICE_NAME,

  HTTP_PORT: port({ default: 8000, desc: 'Port of the OpenAI-compatible API, /health, /healthz, /readyz and /metrics (vLLM listens on 8000).' }),
  HOST: str({ default: '127.0.0.1', desc: 'Address to listen on: loopback by default, 0.0.0.0 (what the image sets) for every address.' }),
  MODEL: str({ default: 'gpufleet/sim-model', desc: 'Name (or path) of the simulated model; the `root` of every served model.' }),
  SERVED_MODEL_NAME: list({
    optional: true,
    desc: 'Model names the API accepts, comma-separated; the first is the one responses name. Default: MODEL.',
  }),
  MAX_MODEL_LEN: int({ default: 8192, min: 16, desc: 'Context length: prompt plus output tokens of one request.' }),
  MAX_NUM_SEQS: int({ default: 256, min: 1, desc: 'Requests running at once; more wait in a FCFS queue.' }),
  KV_CACHE_BLOCKS: int({ default: 8192, min: 1, desc: 'KV cache size in blocks of BLOCK_SIZE tokens.' }),
  BLOCK_SIZE: int({ default: 16, min: 1, max: 1024, desc: 'Tokens per KV cache block (and per prefix-cache hash).' }),
  ENABLE_PREFIX_CACHING: bool({ default: true, desc: 'Reuse cached prompt blocks across requests.' }),
  PREFILL_US_PER_TOKEN: num({ default: 50, min: 0, desc: 'Prefill time per uncached prompt token, in microseconds.' }),
  ITL_MS: num({ default: 10, min: 0, desc: 'Inter-token latency of a lone request, in milliseconds.' }),
  KV_TRANSFER_US_PER_BLOCK: num({
    default: 100,
    min: 0,
    desc: 'Disaggregated decode (kv_transfer_params.do_remote_prefill): time to pull one KV block of the prompt from the prefill engine, in microseconds.',
  }),
  LOAD_SLOWDOWN: num({
    default: 0.5,
    min: 0,
    desc: 'How much slower prefill and decode get with a full batch (MAX_NUM_SEQS running): 0.5 = 50 % slower, linear in between.',
  }),
  LATENCY_JITTER: num({ default: 0, min: 0, max: 1, desc: 'Relative random spread of every duration (seeded): 0.1 = ±10 %.' }),
  MEAN_OUTPUT_LEN: int({ default: 128, min: 1, desc: 'Mean length of an answer not cut by max_tokens (uniform 1 to twice this).' }),
  EMBEDDING_DIM: int({ default: 768, min: 1, max: 16384, desc: 'Length of the vectors /v1/embeddings returns (requests may ask for fewer).' }),
  // Not SEED (nor *TOKEN* above): the config library treats such names as credentials and hides their values.
  SEED: int({ default: 0, desc: 'Seed of everything random (generated text, jitter, injected errors); same seed, same answers.' }),
  ERROR_RATE: num({ default: 0, min: 0, max: 1, desc: 'Fraction of inference requests answered with an injected 500 error.' }),
  CRASH_AFTER: int({ optional: true, min: 1, desc: 'Exit (status 70) right after answering this many inference requests.' }),
  SLOW_START_S: duration({ default: 0, desc: 'Simulated model load: seconds after start during which /health, /readyz and the API answer 503.' }),
  REPLICA_NAME: str({
    default: defaultReplicaName(),
    pattern: SUBJECT_TOKEN,
    patternDesc: 'a name of A-Z, a-z, 0-9, "_" and "-" (at most 128 characters, no dots)',
    desc: 'Name of this replica: the x-gpufleet-replica response header and the last token of the KV events subject. Default: the host name.',
  }),
  TENSOR_PARALLEL_SIZE: int({ default: 1, min: 1, max: 64, desc: 'Accepted like vLLM’s and reported (gpufleet_engine_sim_info, the start-up log); changes no timing.' }),
  KV_EVENTS_SUBJECT: str({
    optional: true,
    pattern: SUBJECT,
    patternDesc: 'a NATS subject of dot-separated tokens of A-Z, a-z, 0-9, "_" and "-" (no wildcards)',
    desc: 'NATS subject of the KV cache events. Default: gpufleet.<GPUFLEET_CLUSTER>.kv.events.<REPLICA_NAME>.',
  }),
  API_KEY: str({ optional: true, secret: true, desc: 'When set, /v1/* requests need "Authorization: Bearer <API_KEY>" (like vLLM’s --api-key).' }),
  ERROR_FORMAT: str({
    default: 'vllm',
    choices: ERROR_FORMATS,
    desc: 'Error body shape: vllm {"error":{…,"type":"BadRequestError","code":400}}, openai {"error":{…,"type":"invalid_request_error","code":"…"}}, vllm-legacy {"object":"error",…}.',
  }),
  DRAIN_TIMEOUT_S: duration({ default: 30, min: 0, desc: 'On SIGTERM, how long in-flight requests may take to finish before the process exits anyway.' }),
  NNODES: int({ default: 1, min: 1, max: 64, desc: 'Nodes of the engine group (SGLang’s --nnodes); above 1, DIST_INIT_ADDR names the leader’s rendezvous.' }),
  NODE_RANK: int({
    default: 0,
    min: 0,
    max: 63,
    desc: 'This node’s rank in the group: 0 is the leader (serves the API once every rank joined), the others are workers (no API; they exit when the leader goes).',
  }),
  DIST_INIT_ADDR: str({
    optional: true,
    pattern: /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/,
    patternDesc: 'host:port (an IPv6 address in brackets)',
    desc: 'The leader’s rendezvous address, host:port: the leader listens on its port, workers connect to it.',
  }),
  DIST_TIMEOUT_S: duration({ default: 300, min: 1, desc: 'How long the leader waits for every rank, and a worker for the leader, before exiting with status 1.' }),
}, [
  (c) => (c.NNODES > 1 && c.DIST_INIT_ADDR === undefined ? [{ variable: 'DIST_INIT_ADDR', message: `required when NNODES is ${c.NNODES}: the leader's host:port` }] : []),
  (c) => (c.NODE_RANK >= c.NNODES ? [{ variable: 'NODE_RANK', message: `expected a rank below NNODES (${c.NNODES}), got ${c.NODE_RANK}` }] : []),
]);

export type EngineSimConfig = ConfigOf<typeof engineSimConfigSchema.fields>;
