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

/**
 * How vLLM spreads one replica over several pods: `ray` (a Ray head on the leader, workers
 * joining it, tensor × pipeline parallel over the whole gang) or `data-parallel` (vLLM's native
 * multi-node data parallel: every pod runs engine ranks, the leader serves the API). SGLang and
 * TRT-LLM have one multi-node form each (`--nnodes`/`--dist-init-addr`, MPI) and take neither.
 */
export const MULTI_NODE_MODES = ['ray', 'data-parallel'] as const;
export type MultiNodeMode = (typeof MULTI_NODE_MODES)[number];
export const DEFAULT_MULTI_NODE_MODE: MultiNodeMode = 'ray';

/** The NICs a pod's collectives use, from the RDMA NICs nearest its accelerators. */
export interface GroupNetwork {
  /** Network interfaces (e.g. `ib0`) for NCCL's and Gloo's bootstrap sockets. */
  readonly socketInterfaces: readonly string[];
  /** RDMA devices (e.g. `mlx5_0`) for NCCL's InfiniBand/RoCE transport. */
  readonly ibHcas: readonly string[];
}

/** Tensor × pipeline parallel sizes of a group; their product is every accelerator of the gang. */
export interface ParallelLayout {
  readonly tensorParallel: number;
  readonly pipelineParallel: number;
}

/**
 * One pod's place in a multi-node replica: the gang the scheduler placed as one unit. Rank 0 is
 * the leader: it serves the API, the others join it through `rendezvousPort` on `leaderAddress`.
 */
export interface EngineGroup {
  /** Pods of the replica (the engine's node count), at least 2. */
  readonly size: number;
  /** This pod's rank, 0 (the leader) … size − 1. */
  readonly rank: number;
  /** Where every pod reaches the leader: its node's advertised host, or its headless Service's DNS name. */
  readonly leaderAddress: string;
  /** This pod's own address, which the engine advertises to the others (Ray's --node-ip-address, VLLM_HOST_IP). */
  readonly podAddress: string;
  /**
   * The leader's rendezvous port, allocated by the leader's runtime: Ray's GCS port, vLLM's
   * data-parallel RPC port, SGLang's dist-init port, the MPI launcher's SSH port on the workers.
   */
  readonly rendezvousPort: number;
  /**
   * True when the pods share one NVLink domain (the placement's topology level is
   * `nvlink-domain` or narrower, e.g. an NVL72 rack): tensor parallel spans pods. Otherwise the
   * gang meets over the network and pipeline parallel spans pods, tensor parallel within each.
   */
  readonly nvlinkAcrossPods: boolean;
  /**
   * Every pod's address by rank (the leader's first); needed where the leader launches the
   * ranks itself (TRT-LLM's mpirun host list).
   */
  readonly peerAddresses?: readonly string[];
  /** vLLM only (default DEFAULT_MULTI_NODE_MODE). */
  readonly mode?: MultiNodeMode;
  /**
   * Sizes chosen elsewhere (a model's memory estimate, when model delivery gives one); absent:
   * derived from the gang (see `groupLayout`). Their product must be every accelerator of the gang.
   */
  readonly layout?: ParallelLayout;
  readonly network?: GroupNetwork;
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
  /**
   * Share of each accelerator's memory the engine takes, in (0, 1], in place of the preset's
   * (vLLM `--gpu-memory-utilization`, SGLang `--mem-fraction-static`): a deployment's sizing.
   */
  readonly memoryFraction?: number;
  readonly speculative?: SpeculativeDecoding;
  readonly kvOffload?: KvOffload;
  /** Set when the replica spans pods (DeploymentRole.size > 1): this pod's rank and its leader. */
  readonly group?: EngineGroup;
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
