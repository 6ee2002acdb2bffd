/** Which attention a decoder layer has: full (every token) or a sliding window. */
export type LayerAttention = 'full' | 'sliding';

/** Multi-head latent attention (DeepSeek-V2/V3): the KV cache holds one compressed latent. */
export interface LatentAttention {
  kvLoraRank: number;
  qkRopeHeadDim: number;
  qkNopeHeadDim: number;
  vHeadDim: number;
  /** Rank of the compressed query, when queries are compressed too (V3); absent for V2-Lite. */
  qLoraRank?: number;
}

export interface MixtureOfExperts {
  /** Routed experts per MoE layer. */
  experts: number;
  expertsPerToken: number;
  /** Intermediate size of one routed expert. */
  expertIntermediateSize: number;
  /** Intermediate size of all shared experts of a layer together; 0 when there are none. */
  sharedIntermediateSize: number;
  /** Whether the shared experts' output passes a sigmoid gate (Qwen2-MoE `shared_expert_gate`). */
  sharedExpertGate: boolean;
  /** Per layer, whether its MLP is the MoE block (false: a dense MLP of `intermediateSize`). */
  moeLayers: boolean[];
}

export interface WeightQuantization {
  method: string;
  /** Bits per quantized weight. */
  bits: number;
}

/**
 * What the estimate needs to know about a decoder-only transformer, whichever file it came from
 * (transformers' config.json or GGUF metadata).
 */
export interface ModelShape {
  /** `model_type` (config.json) or `general.architecture` (GGUF). */
  architecture: string;
  layers: number;
  hiddenSize: number;
  intermediateSize: number;
  vocabSize: number;
  attentionHeads: number;
  /** KV heads (GQA: fewer than attention heads; MHA: equal). For MLA the cache has one latent. */
  kvHeads: number;
  headDim: number;
  /** Value head size when it differs from `headDim` (GGUF `attention.value_length`). */
  valueHeadDim: number;
  /** Checkpoint dtype (`torch_dtype`/`dtype`), when the config says. */
  dtype?: string;
  tieWordEmbeddings: boolean;
  attentionBias: boolean;
  /** Per-head RMSNorm on queries and keys (Qwen3). */
  qkNorm: boolean;
  /** Norm weights per decoder layer, in units of hiddenSize (2; Gemma-2 has 4). */
  normsPerLayer: number;
  /** Per layer; all 'full' unless the model uses sliding-window attention. */
  layerAttention: LayerAttention[];
  /** Tokens of the sliding window, when any layer is 'sliding'. */
  slidingWindow?: number;
  mla?: LatentAttention;
  moe?: MixtureOfExperts;
  quantization?: WeightQuantization;
  /** The longest context the model was trained for (`max_position_embeddings`, GGUF `context_length`). */
  maxContextLength?: number;
}
