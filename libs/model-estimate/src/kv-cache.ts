import type { ModelShape } from './model-shape';

/** vLLM's default `--block-size` on CUDA: tokens per KV cache page. */
export const VLLM_BLOCK_SIZE = 16;

/**
 * KV cache bytes one token adds to one layer on one tensor-parallel rank, as vLLM's
 * `AttentionSpec.real_page_size_bytes / block_size` (vllm/v1/kv_cache_interface.py):
 * 2 × kv_heads × head_size × dtype bytes (K and V; `head_size + head_size_v` when they differ).
 * With tensor parallelism each rank holds `max(1, kv_heads / tp)` heads (`ModelConfig.get_num_kv_heads`),
 * so heads are replicated once tp exceeds them. MLA (`MLAAttentionSpec`) stores one latent of
 * `kv_lora_rank + qk_rope_head_dim` per token, no factor 2, replicated on every rank.
 */
export function kvBytesPerTokenPerLayer(shape: ModelShape, dtypeBytes: number, tensorParallelSize = 1): number {
  if (shape.mla) return (shape.mla.kvLoraRank + shape.mla.qkRopeHeadDim) * dtypeBytes;
  const headsPerRank = Math.max(1, Math.floor(shape.kvHeads / tensorParallelSize));
  return headsPerRank * (shape.headDim + shape.valueHeadDim) * dtypeBytes;
}

/** The whole model's KV bytes per token (all layers, one copy, no TP): 2 × layers × kv_heads × head_dim × dtype bytes. */
export function kvBytesPerToken(shape: ModelShape, dtypeBytes: number): number {
  return shape.layers * kvBytesPerTokenPerLayer(shape, dtypeBytes, 1);
}

export interface KvCacheRequest {
  /** Tokens per sequence: vLLM's `--max-model-len`. */
  contextLength: number;
  /** Sequences that must fit at full context length at once. */
  concurrency: number;
  /** Bytes per KV value (`--kv-cache-dtype`: 2 for auto on a bf16/fp16 model, 1 for fp8). */
  dtypeBytes: number;
  /** `--max-num-batched-tokens`: sliding-window layers keep the window plus one step's tokens. */
  maxNumBatchedTokens: number;
  tensorParallelSize: number;
  blockSize?: number;
}

/**
 * KV cache bytes on one tensor-parallel rank for `concurrency` sequences of `contextLength`
 * tokens, block-rounded like vLLM's `max_memory_usage_bytes`: a full-attention layer needs
 * `cdiv(max_model_len, block_size)` pages, a sliding-window layer
 * `cdiv(min(sliding_window − 1 + max_num_batched_tokens, max_model_len), block_size) + 1`.
 */
export function kvCacheBytesPerRank(shape: ModelShape, request: KvCacheRequest): number {
  const blockSize = request.blockSize ?? VLLM_BLOCK_SIZE;
  const perTokenLayer = kvBytesPerTokenPerLayer(shape, request.dtypeBytes, request.tensorParallelSize);
  const fullBlocks = Math.ceil(request.contextLength / blockSize);
  const window = shape.slidingWindow ?? request.contextLength;
  const slidingTokens = Math.min(window - 1 + request.maxNumBatchedTokens, request.contextLength);
  const slidingBlocks = Math.ceil(slidingTokens / blockSize) + 1;
  let perSequence = 0;
  for (const attention of shape.layerAttention) {
    perSequence += (attention === 'sliding' ? slidingBlocks : fullBlocks) * blockSize * perTokenLayer;
  }
  return perSequence * request.concurrency;
}
