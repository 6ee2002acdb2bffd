/**
 * vLLM-like command-line flags, each the twin of an environment variable of `config.ts`:
 * `engine-sim [serve] [MODEL] --max-num-seqs 64 --itl-ms 5 …`. A flag wins over its variable;
 * a bad value is reported with both names (`--max-num-seqs (MAX_NUM_SEQS): expected …`).
 */
import { ConfigError, EXIT_CONFIG, loadConfig, renderConfigMarkdown } from '@gpufleet/config';
import { engineSimConfigSchema, type EngineSimConfig } from './config';

interface FlagSpec {
  readonly env: string;
  /** Takes no value; `value` is what it sets. */
  readonly sets?: string;
  /** Takes every following non-flag argument (joined with commas). */
  readonly many?: boolean;
}

/** Flags with their variables; aliases of vLLM's own names where the meaning is the same. */
export const FLAGS: Readonly<Record<string, FlagSpec>> = {
  '--model': { env: 'MODEL' },
  '--served-model-name': { env: 'SERVED_MODEL_NAME', many: true },
  '--host': { env: 'HOST' },
  '--port': { env: 'HTTP_PORT' },
  '--max-model-len': { env: 'MAX_MODEL_LEN' },
  '--max-num-seqs': { env: 'MAX_NUM_SEQS' },
  '--kv-cache-blocks': { env: 'KV_CACHE_BLOCKS' },
  '--num-gpu-blocks-override': { env: 'KV_CACHE_BLOCKS' },
  '--block-size': { env: 'BLOCK_SIZE' },
  '--enable-prefix-caching': { env: 'ENABLE_PREFIX_CACHING', sets: 'true' },
  '--no-enable-prefix-caching': { env: 'ENABLE_PREFIX_CACHING', sets: 'false' },
  '--prefill-us-per-token': { env: 'PREFILL_US_PER_TOKEN' },
  '--itl-ms': { env: 'ITL_MS' },
  '--kv-transfer-us-per-block': { env: 'KV_TRANSFER_US_PER_BLOCK' },
  '--load-slowdown': { env: 'LOAD_SLOWDOWN' },
  '--latency-jitter': { env: 'LATENCY_JITTER' },
  '--mean-output-len': { env: 'MEAN_OUTPUT_LEN' },
  '--embedding-dim': { env: 'EMBEDDING_DIM' },
  '--seed': { env: 'SEED' },
  '--error-rate': { env: 'ERROR_RATE' },
  '--crash-after': { env: 'CRASH_AFTER' },
  '--slow-start-s': { env: 'SLOW_START_S' },
  '--replica-name': { env: 'REPLICA_NAME' },
  '--tensor-parallel-size': { env: 'TENSOR_PARALLEL_SIZE' },
  '-tp': { env: 'TENSOR_PARALLEL_SIZE' },
  '--kv-events-subject': { env: 'KV_EVENTS_SUBJECT' },
  '--api-key': { env: 'API_KEY' },
  '--error-format': { env: 'ERROR_FORMAT' },
  '--drain-timeout-s': { env: 'DRAIN_TIMEOUT_S' },
  '--log-level': { env: 'LOG_LEVEL' },
  // SGLang's group flags: the same on every rank but --node-rank.
  '--nnodes': { env: 'NNODES' },
  '--node-rank': { env: 'NODE_RANK' },
  '--dist-init-addr': { env: 'DIST_INIT_ADDR' },
  '--dist-timeout': { env: 'DIST_TIMEOUT_S' },
};

/**
 * vLLM flags that mean nothing to a simulator, accepted so that a vLLM command line runs
 * unchanged; `true` when the flag takes a value.
 */
export const IGNORED_VLLM_FLAGS: Readonly<Record<string, boolean>> = {
  '--dtype': true,
  '--gpu-memory-utilization': true,
  '--swap-space': true,
  '--cpu-offload-gb': true,
  '--kv-cache-dtype': true,
  '--quantization': true,
  '--tokenizer': true,
  '--revision': true,
  '--download-dir': true,
  '--load-format': true,
  '--generation-config': true,
  '--pipeline-parallel-size': true,
  '--data-parallel-size': true,
  '--max-num-batched-tokens': true,
  // The simulator always speaks the NixlConnector protocol of kv_transfer_params.
  '--kv-transfer-config': true,
  '--uvicorn-log-level': true,
  '--trust-remote-code': false,
  '--enforce-eager': false,
  '--enable-chunked-prefill': false,
  '--no-enable-chunked-prefill': false,
  '--disable-log-requests': false,
  '--disable-log-stats': false,
  '--enable-prompt-tokens-details': false,
};

export interface ParsedArgs {
  /** Variables set by flags. */
  readonly env: Record<string, string>;
  /** Which flag set each variable (for error messages). */
  readonly flagOf: Record<string, string>;
  readonly ignored: string[];
  readonly help: boolean;
}

/** Thrown for a command line that cannot be read (unknown flag, missing value). */
export class UsageError extends Error {
  constructor(message: string) {
    super(`INVALID_ARGUMENTS: ${message} (see --help)`);
    this.name = 'UsageError';
  }
}

function isFlag(arg: string): boolean {
  return arg.startsWith('-') && arg.length > 1 && !/^-\d/.test(arg);
}

export function parseArgs(argv: readonly string[]): ParsedArgs {
  const env: Record<string, string> = {};
  const flagOf: Record<string, string> = {};
  const ignored: string[] = [];
  let help = false;
  const positional: string[] = [];

  const set = (flag: string, variable: string, value: string): void => {
    env[variable] = value;
    flagOf[variable] = flag;
  };

  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!isFlag(arg)) {
      positional.push(arg);
      continue;
    }
    if (arg === '--help' || arg === '-h') {
      help = true;
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    const inline = eq > 0 ? arg.slice(eq + 1) : undefined;
    // vLLM accepts snake_case spellings of its flags too.
    const flag = name.startsWith('--') ? `--${name.slice(2).replace(/_/g, '-')}` : name;

    if (flag in IGNORED_VLLM_FLAGS) {
      if (IGNORED_VLLM_FLAGS[flag] && inline === undefined) {
        if (i + 1 >= argv.length) throw new UsageError(`${flag} expects a value`);
        i++;
      }
      ignored.push(flag);
      continue;
    }
    const spec = FLAGS[flag];
    if (!spec) throw new UsageError(`unknown flag ${name}`);

    if (spec.sets !== undefined) {
      if (inline === undefined) set(flag, spec.env, spec.sets);
      else set(flag, spec.env, spec.sets === 'true' ? inline : inline === 'true' ? 'false' : inline === 'false' ? 'true' : inline);
      continue;
    }
    if (inline !== undefined) {
      set(flag, spec.env, inline);
      continue;
    }
    if (i + 1 >= argv.length || isFlag(argv[i + 1])) throw new UsageError(`${flag} expects a value`);
    if (spec.many) {
      const values: string[] = [];
      while (i + 1 < argv.length && !isFlag(argv[i + 1])) values.push(argv[++i]);
      set(flag, spec.env, values.join(','));
    } else {
      set(flag, spec.env, argv[++i]);
    }
  }

  // `engine-sim serve MODEL` and `engine-sim MODEL`, like `vllm serve MODEL`.
  if (positional[0] === 'serve') positional.shift();
  if (positional.length > 1) throw new UsageError(`one positional argument (the model) expected, got ${positional.map((p) => JSON.stringify(p)).join(' ')}`);
  if (positional.length === 1) {
    if (flagOf.MODEL) throw new UsageError('the model is given twice (positional and --model)');
    set('MODEL', 'MODEL', positional[0]);
    flagOf.MODEL = 'the positional model argument';
  }
  return { env, flagOf, ignored, help };
}

/** The flag names of each variable, for --help. */
function flagsByVariable(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [flag, spec] of Object.entries(FLAGS)) {
    if (spec.sets === 'false') continue;
    out.set(spec.env, [...(out.get(spec.env) ?? []), flag]);
  }
  return out;
}

export function helpText(): string {
  const byVariable = flagsByVariable();
  const lines = [
    'usage: engine-sim [serve] [MODEL] [--flag value …]',
    '',
    'A vLLM-compatible simulated engine. Every flag has an environment variable twin; flags win.',
    '',
  ];
  for (const [variable, spec] of Object.entries(engineSimConfigSchema.fields)) {
    const flags = byVariable.get(variable);
    const name = flags ? `${flags.join(', ')} (${variable})` : variable;
    const fallback = spec.hasDefault ? ` [default: ${Array.isArray(spec.defaultValue) ? spec.defaultValue.join(',') : String(spec.defaultValue)}]` : '';
    lines.push(`  ${name}  ${spec.type}${fallback}`, `      ${spec.description}`);
  }
  lines.push('', `Accepted and ignored vLLM flags: ${Object.keys(IGNORED_VLLM_FLAGS).join(' ')}`);
  return `${lines.join('\n')}\n`;
}

/** The configuration tables for docs/engine-sim.md. */
export function configMarkdown(): string {
  return renderConfigMarkdown(engineSimConfigSchema);
}

export interface LoadedEngineSimConfig {
  readonly config: EngineSimConfig;
  readonly ignoredFlags: readonly string[];
}

/**
 * Reads the command line and the environment into the validated configuration. Throws
 * UsageError for an unreadable command line and ConfigError (problems naming the flag and the
 * variable) for bad values.
 */
export function loadEngineSimConfig(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = process.env): LoadedEngineSimConfig {
  const args = parseArgs(argv);
  try {
    return { config: loadConfig(engineSimConfigSchema, { ...env, ...args.env }), ignoredFlags: args.ignored };
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    throw new ConfigError(
      error.problems.map((problem) => {
        const flag = args.flagOf[problem.variable];
        return flag ? { variable: `${flag} (${problem.variable})`, message: problem.message } : problem;
      }),
    );
  }
}

/** For `instrument.ts`: prints help and exits 0, or prints what is wrong and exits 78. */
export function loadEngineSimConfigOrExit(argv: readonly string[]): LoadedEngineSimConfig {
  let help = false;
  try {
    help = parseArgs(argv).help;
  } catch {
    // Reported below by loadEngineSimConfig.
  }
  if (help) {
    process.stdout.write(helpText());
    process.exit(0);
  }
  try {
    return loadEngineSimConfig(argv);
  } catch (error) {
    if (!(error instanceof ConfigError) && !(error instanceof UsageError)) throw error;
    process.stderr.write(`${error.message}\n`);
    return process.exit(EXIT_CONFIG);
  }
}
