/** What a deployment asks of an inference engine; mapped onto a real command line by `buildEngineCommand`. */

export const ENGINE_KINDS = ['vllm', 'sglang', 'trtllm', 'llama-cpp', 'custom'] as const;
export type EngineKind = (typeof ENGINE_KINDS)[number];

export const ENGINE_MODES = ['latency', 'throughput'] as const;
export type EngineMode = (typeof ENGINE_MODES)[number];

/** `server` serves whole requests; `prefill` and `decode` are the two halves of a disaggregated pair. */
export const ENGINE_ROLES = ['server', 'prefill', 'decode'] as const;
export type EngineRole = (typeof ENGINE_ROLES)[number];

export const SPECULATIVE_METHODS = ['eagle3', 'mtp', 'ngram'] as const;
export type SpeculativeMethod = (typeof SPECULATIVE_METHODS)[number];

export interface SpeculativeDecoding {
  readonly method: SpeculativeMethod;
  /** Path of the draft head; required by eagle3, refused by mtp (built into the model) and ngram (no model). */
  readonly draftModel?: string;
  readonly numSpeculativeTokens?: number;
}

export interface KvOffload {
  /** vLLM: a KV connector class (`OffloadingConnector`, `LMCacheConnectorV1`); SGLang: `hicache`. */
  readonly connector: string;
  /** Host memory for offloaded KV blocks, bytes. */
  readonly cpuBytes?: number;
}

/** Where an engine listens unless its spec says otherwise: every address of the node. */
export const DEFAULT_ENGINE_HOST = '0.0.0.0';

export interface EngineSpec {
  readonly engine: EngineKind;
  /** Engine release, e.g. `0.11.0`; checked against the oldest release the presets were written for. */
  readonly version?: string;
  readonly mode: EngineMode;
  readonly role: EngineRole;
  readonly modelPath: string;
  readonly servedModelName: string;
  readonly port: number;
  /**
   * Address the engine's server binds (default DEFAULT_ENGINE_HOST, every address of the node);
   * the node runtime gives 127.0.0.1 when the node is reached on loopback (a local stack).
   */
  readonly host?: string;
  /** Accelerators given to one pod; the tensor-parallel size. */
  readonly acceleratorsPerPod: number;
  /** Device indices or UUIDs exported as CUDA_VISIBLE_DEVICES, one per accelerator. */
  readonly acceleratorIds: readonly string[];
  /** Memory of one accelerator, MiB. */
  readonly acceleratorMemoryMib?: number;
  readonly speculative?: SpeculativeDecoding;
  readonly kvOffload?: KvOffload;
  /** Appended last, verbatim; may not repeat a flag the preset already sets. */
  readonly extraArgs?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  /** `custom` only: a whitespace-separated command with {{model_path}}, {{port}}, {{gpu_ids}} … placeholders. */
  readonly customTemplate?: string;
}

export interface EngineCommand {
  readonly command: string;
  readonly args: string[];
  readonly env: Record<string, string>;
}

export interface SpecProblem {
  /** Dotted path of the offending field, e.g. `speculative.draftModel`. */
  readonly field: string;
  readonly message: string;
}

/** Thrown for a spec that cannot become a command line; lists every problem, each naming its field. */
export class EngineSpecError extends Error {
  readonly reason = 'INVALID_ENGINE_SPEC';

  constructor(readonly problems: readonly SpecProblem[]) {
    super(`INVALID_ENGINE_SPEC: ${problems.map((p) => `${p.field}: ${p.message}`).join('; ')}`);
    this.name = 'EngineSpecError';
  }
}
