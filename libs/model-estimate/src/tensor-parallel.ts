import { ModelEstimateError } from './errors';
import { GiB, estimateMemory, type EstimateOptions, type MemoryEstimate, type ModelDescription } from './estimate';
import type { ModelShape } from './model-shape';

export interface GpuGang {
  /** Memory of one GPU, bytes (e.g. 80 GiB for an H100-80G). */
  memoryBytes: number;
  /** The most GPUs one replica may span (the largest tensor-parallel gang the pool offers). */
  maxGpus: number;
}

export type TensorParallelChoice =
  | { fits: true; tensorParallelSize: number; estimate: MemoryEstimate }
  | { fits: false; reason: 'INSUFFICIENT_GPU_MEMORY'; message: string; estimate?: MemoryEstimate };

/**
 * Tensor-parallel sizes vLLM accepts for the model, smallest first, up to `maxGpus`: powers of two
 * that divide the attention heads and either divide the KV heads or are a multiple of them (vLLM
 * replicates KV heads then). MLA models need only the first.
 */
export function tensorParallelCandidates(shape: ModelShape, maxGpus: number): number[] {
  const sizes: number[] = [];
  for (let tp = 1; tp <= maxGpus; tp *= 2) {
    if (shape.attentionHeads % tp !== 0) break;
    if (!shape.mla && shape.kvHeads % tp !== 0 && tp % shape.kvHeads !== 0) continue;
    sizes.push(tp);
  }
  return sizes;
}

/**
 * The smallest tensor-parallel size whose per-GPU need fits one GPU of the gang, or a refusal that
 * gives the numbers of the largest size tried.
 */
export function chooseTensorParallelSize(model: ModelDescription, gang: GpuGang, options: Omit<EstimateOptions, 'tensorParallelSize'> = {}): TensorParallelChoice {
  if (!(gang.memoryBytes > 0)) throw new ModelEstimateError('INVALID_ESTIMATE_OPTIONS', `memoryBytes is ${gang.memoryBytes}; expected the bytes of one GPU`);
  if (!Number.isSafeInteger(gang.maxGpus) || gang.maxGpus < 1) {
    throw new ModelEstimateError('INVALID_ESTIMATE_OPTIONS', `maxGpus is ${gang.maxGpus}; expected a positive integer`);
  }
  const candidates = tensorParallelCandidates(model.shape, gang.maxGpus);
  let last: MemoryEstimate | undefined;
  for (const tp of candidates) {
    last = estimateMemory(model, { ...options, tensorParallelSize: tp });
    if (last.perGpu.total <= gang.memoryBytes) return { fits: true, tensorParallelSize: tp, estimate: last };
  }
  const single = estimateMemory(model, { ...options, tensorParallelSize: 1 });
  const utilization = single.gpuMemoryUtilization;
  const usable = gang.memoryBytes * utilization;
  const largest = candidates[candidates.length - 1] ?? 1;
  const parts = last
    ? `; at tensor-parallel ${largest} each GPU needs ${gib(last.perGpu.total * utilization)} GiB (weights ${gib(last.perGpu.weights)}, KV cache ${gib(last.perGpu.kvCache)}, activations ${gib(last.perGpu.activations)}, CUDA graphs ${gib(last.perGpu.cudaGraphs)})`
    : `; no tensor-parallel size up to ${gang.maxGpus} divides the ${model.shape.attentionHeads} attention heads`;
  const message =
    `needs ${gib(single.total * utilization)} GiB per replica (${single.contextLength} tokens × ${single.concurrency} sequences); ` +
    `the largest gang of ${largest} × ${gib(gang.memoryBytes)} GiB at ${utilization} utilisation gives ${gib(usable)} GiB per GPU${parts}: ` +
    'lower the context length or concurrency, use an fp8 KV cache or a quantized artifact, or a pool with larger or more GPUs';
  return { fits: false, reason: 'INSUFFICIENT_GPU_MEMORY', message: `INSUFFICIENT_GPU_MEMORY: ${message}`, estimate: last };
}

function gib(bytes: number): string {
  return (bytes / GiB).toFixed(1);
}
