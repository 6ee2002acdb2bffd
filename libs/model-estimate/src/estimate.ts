import { isTorchDtype, torchDtypeBytes } from './dtypes';
import { ModelEstimateError } from './errors';
import { kvBytesPerToken, kvCacheBytesPerRank } from './kv-cache';
import type { ModelShape } from './model-shape';

export const GiB = 1024 ** 3;

/** vLLM's `--gpu-memory-utilization` default: the share of each GPU the engine may take. */
export const DEFAULT_GPU_MEMORY_UTILIZATION = 0.9;
/**
 * vLLM V1's `--max-num-batched-tokens` default for the OpenAI server on GPUs of 70 GiB and more
 * (`EngineArgs` usage-context defaults; 2048 on smaller GPUs). The profile run pushes this many
 * tokens through the model, which sets the activation peak.
 */
export const DEFAULT_MAX_NUM_BATCHED_TOKENS = 8192;
/** vLLM's `--max-num-seqs` default: the sampler's dummy run computes this many rows of logits. */
export const DEFAULT_MAX_NUM_SEQS = 256;
/**
 * GPU memory outside PyTorch's allocator per rank (CUDA context, cuBLAS workspaces, NCCL buffers).
 * vLLM logs it as `non_torch_memory`: 0.15–0.39 GiB on single GPUs (vllm-project/vllm#11251,
 * #14452, #15340); rounded up to cover NCCL under tensor parallelism.
 */
export const NON_TORCH_BYTES_PER_GPU = 0.5 * GiB;
/**
 * Memory of captured CUDA graphs per rank. vLLM (0.21+, which profiles it) logs
 * "Estimated CUDA graph memory: 0.36 GiB total" for a TP-2 deployment (gpustack/runner#251); older
 * releases reported up to 2.4 GiB with 4 GPUs (vllm-project/vllm#7553). Zero with `--enforce-eager`.
 */
export const CUDA_GRAPH_BYTES_PER_GPU = 0.5 * GiB;
/** Bytes of a logit: vLLM's sampler computes logits in float32. */
const LOGIT_BYTES = 4;

export type WeightsSource = 'safetensors-headers' | 'safetensors-index' | 'config-parameters' | 'gguf';

/** What an estimate is computed from: the decoder's shape and what its weights weigh. */
export interface ModelDescription {
  shape: ModelShape;
  weights: {
    bytes: number;
    source: WeightsSource;
    /** Bytes by dtype (safetensors) or GGML type (GGUF), when the headers were read. */
    byDtype?: Record<string, number>;
    /** Parameters, when counted from the config. */
    parameters?: number;
  };
}

export interface EstimateOptions {
  /** Tokens per sequence (vLLM `--max-model-len`); default the model's `max_position_embeddings`. */
  contextLength?: number;
  /** Sequences of `contextLength` that must fit in the KV cache at once; default 1. */
  concurrency?: number;
  /** `--tensor-parallel-size`; default 1. */
  tensorParallelSize?: number;
  /** `--gpu-memory-utilization`, in (0, 1]; default 0.9. */
  gpuMemoryUtilization?: number;
  /** `--kv-cache-dtype`: `auto` (the model dtype), `fp8`, `fp8_e4m3`, `fp8_e5m2`, or a torch dtype. */
  kvCacheDtype?: string;
  /** `--dtype` for activations (and the KV cache under `auto`); default the checkpoint's, else bfloat16. */
  dtype?: string;
  maxNumBatchedTokens?: number;
  maxNumSeqs?: number;
  /** `--enforce-eager`: no CUDA graphs. */
  enforceEager?: boolean;
}

/** Bytes of one tensor-parallel rank (one GPU). `total` is what the GPU must have: the sum ÷ utilisation. */
export interface PerGpuMemory {
  weights: number;
  kvCache: number;
  activations: number;
  cudaGraphs: number;
  total: number;
}

export interface MemoryEstimate {
  /** Bytes of the weights as stored in the artifact (before any cast on load). */
  checkpointBytes: number;
  /** Bytes over the whole replica (all tensor-parallel ranks). Weights as loaded in GPU memory. */
  weights: number;
  kvCache: number;
  activations: number;
  cudaGraphs: number;
  /** (weights + kvCache + activations + cudaGraphs) ÷ gpuMemoryUtilization: GPU memory the replica needs. */
  total: number;
  perGpu: PerGpuMemory;
  /** vLLM's per-token KV size for the whole model, one copy: 2 × layers × kv_heads × head_dim × dtype bytes (MLA: layers × (kv_lora_rank + qk_rope_head_dim) × dtype bytes). */
  kvCacheBytesPerToken: number;
  weightsSource: WeightsSource;
  tensorParallelSize: number;
  gpuMemoryUtilization: number;
  contextLength: number;
  concurrency: number;
  kvCacheDtypeBytes: number;
}

/** Estimates the GPU memory a vLLM replica of the model needs (docs/model-estimate.md). */
export function estimateMemory(model: ModelDescription, options: EstimateOptions = {}): MemoryEstimate {
  const o = resolveOptions(model.shape, options);
  const shape = model.shape;
  const tp = o.tensorParallelSize;

  const weights = Math.ceil(loadedWeightBytes(model, o.activationBytes) / tp);
  const kvCache = kvCacheBytesPerRank(shape, {
    contextLength: o.contextLength,
    concurrency: o.concurrency,
    dtypeBytes: o.kvCacheDtypeBytes,
    maxNumBatchedTokens: o.maxNumBatchedTokens,
    tensorParallelSize: tp,
  });
  const activations = activationBytesPerRank(shape, o);
  const cudaGraphs = o.enforceEager ? 0 : CUDA_GRAPH_BYTES_PER_GPU;
  const perGpu: PerGpuMemory = {
    weights,
    kvCache,
    activations,
    cudaGraphs,
    total: Math.ceil((weights + kvCache + activations + cudaGraphs) / o.gpuMemoryUtilization),
  };
  return {
    checkpointBytes: model.weights.bytes,
    weights: weights * tp,
    kvCache: kvCache * tp,
    activations: activations * tp,
    cudaGraphs: cudaGraphs * tp,
    total: perGpu.total * tp,
    perGpu,
    kvCacheBytesPerToken: kvBytesPerToken(shape, o.kvCacheDtypeBytes),
    weightsSource: model.weights.source,
    tensorParallelSize: tp,
    gpuMemoryUtilization: o.gpuMemoryUtilization,
    contextLength: o.contextLength,
    concurrency: o.concurrency,
    kvCacheDtypeBytes: o.kvCacheDtypeBytes,
  };
}

/**
 * Weights as they sit in GPU memory: a float32 checkpoint is cast to the 16-bit compute dtype on
 * load, so its F32 tensors take half their file size; everything else loads as stored.
 */
function loadedWeightBytes(model: ModelDescription, activationBytes: number): number {
  const { bytes, byDtype, source } = model.weights;
  const declared = model.shape.dtype && isTorchDtype(model.shape.dtype) ? torchDtypeBytes(model.shape.dtype, 'torch_dtype') : undefined;
  if (declared !== 4 || activationBytes >= 4 || source === 'gguf') return bytes;
  if (byDtype) {
    const f32 = byDtype['F32'] ?? 0;
    return bytes - f32 + (f32 * activationBytes) / 4;
  }
  return (bytes * activationBytes) / 4;
}

/**
 * The profile run's peak per rank: `maxNumBatchedTokens` tokens of hidden states (residual, norm
 * output, attention output, another for the MLP input), the QKV projection and the widest MLP
 * transient (gate/up output and its activation; for MoE vLLM's fused-MoE caches, top-k rows of
 * 3 × expert width plus hidden), the sampler's float32 logits for `maxNumSeqs` rows, and the
 * memory outside PyTorch.
 */
function activationBytesPerRank(shape: ModelShape, o: ResolvedOptions): number {
  const tp = o.tensorParallelSize;
  const h = shape.hiddenSize;
  const qkv = ((shape.attentionHeads + 2 * shape.kvHeads) * shape.headDim) / tp;
  const dense = (3 * shape.intermediateSize) / tp;
  const moe = shape.moe ? shape.moe.expertsPerToken * ((3 * shape.moe.expertIntermediateSize) / tp + h) : 0;
  const perToken = 4 * h + qkv + Math.max(dense, moe);
  const hidden = Math.ceil(o.maxNumBatchedTokens * perToken * o.activationBytes);
  const logits = o.maxNumSeqs * shape.vocabSize * LOGIT_BYTES;
  return hidden + logits + NON_TORCH_BYTES_PER_GPU;
}

interface ResolvedOptions {
  contextLength: number;
  concurrency: number;
  tensorParallelSize: number;
  gpuMemoryUtilization: number;
  kvCacheDtypeBytes: number;
  activationBytes: number;
  maxNumBatchedTokens: number;
  maxNumSeqs: number;
  enforceEager: boolean;
}

function resolveOptions(shape: ModelShape, options: EstimateOptions): ResolvedOptions {
  const contextLength = options.contextLength ?? shape.maxContextLength;
  if (contextLength === undefined) {
    throw invalid('contextLength is missing and the model does not declare max_position_embeddings; expected a positive integer of tokens');
  }
  const positive = (name: keyof EstimateOptions, value: number) => {
    if (!Number.isSafeInteger(value) || value <= 0) throw invalid(`${name} is ${value}; expected a positive integer`);
    return value;
  };
  const tensorParallelSize = positive('tensorParallelSize', options.tensorParallelSize ?? 1);
  const utilization = options.gpuMemoryUtilization ?? DEFAULT_GPU_MEMORY_UTILIZATION;
  if (!(utilization > 0 && utilization <= 1)) throw invalid(`gpuMemoryUtilization is ${utilization}; expected a fraction in (0, 1]`);
  // vLLM's `--dtype auto` runs a float32 checkpoint in 16 bits (float16, bfloat16 for Gemma).
  const declared = shape.dtype && isTorchDtype(shape.dtype) ? shape.dtype : undefined;
  const dtype = options.dtype ?? (declared && torchDtypeBytes(declared, 'torch_dtype') <= 2 ? declared : 'bfloat16');
  const activationBytes = torchDtypeBytes(dtype, 'dtype');
  const kvCacheDtype = options.kvCacheDtype ?? 'auto';
  const kvCacheDtypeBytes = kvCacheDtype === 'auto' ? activationBytes : torchDtypeBytes(kvCacheDtype, 'kvCacheDtype');
  return {
    contextLength: positive('contextLength', contextLength),
    concurrency: positive('concurrency', options.concurrency ?? 1),
    tensorParallelSize,
    gpuMemoryUtilization: utilization,
    kvCacheDtypeBytes,
    activationBytes,
    maxNumBatchedTokens: positive('maxNumBatchedTokens', options.maxNumBatchedTokens ?? DEFAULT_MAX_NUM_BATCHED_TOKENS),
    maxNumSeqs: positive('maxNumSeqs', options.maxNumSeqs ?? DEFAULT_MAX_NUM_SEQS),
    enforceEager: options.enforceEager ?? false,
  };
}

function invalid(detail: string): ModelEstimateError {
  return new ModelEstimateError('INVALID_ESTIMATE_OPTIONS', detail);
}
