import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { weightsFromConfig } from './artifact';
import { CUDA_GRAPH_BYTES_PER_GPU, GiB, estimateMemory, type ModelDescription } from './estimate';
import { kvCacheBytesPerRank } from './kv-cache';
import { parseModelConfig } from './model-config';
import { chooseTensorParallelSize, tensorParallelCandidates } from './tensor-parallel';

function fixture(name: string): ModelDescription {
  const shape = parseModelConfig(readFileSync(join(__dirname, '__fixtures__', name, 'config.json'), 'utf8'));
  return { shape, weights: weightsFromConfig(shape) };
}

describe('estimateMemory', () => {
  const llama8b = fixture('llama-3.1-8b');

  it('adds weights, KV cache, activations and CUDA graphs and divides by the GPU memory utilisation', () => {
    const e = estimateMemory(llama8b, { contextLength: 8192, concurrency: 4 });
    expect(e.kvCache).toBe(4 * 8192 * 131072);
    expect(e.cudaGraphs).toBe(CUDA_GRAPH_BYTES_PER_GPU);
    expect(e.total).toBe(Math.ceil((e.weights + e.kvCache + e.activations + e.cudaGraphs) / 0.9));
    // A Llama-3.1-8B replica at 4 × 8k needs about 15 GiB of weights, 4 GiB of KV and a few GiB of overheads.
    expect(e.total / GiB).toBeGreaterThan(20);
    expect(e.total / GiB).toBeLessThan(26);
  });

  it('splits weights and KV heads over tensor-parallel ranks and keeps per-GPU overheads per GPU', () => {
    const one = estimateMemory(llama8b, { contextLength: 8192 });
    const two = estimateMemory(llama8b, { contextLength: 8192, tensorParallelSize: 2 });
    expect(two.perGpu.weights).toBe(one.perGpu.weights / 2);
    expect(two.perGpu.kvCache).toBe(one.perGpu.kvCache / 2);
    expect(two.perGpu.cudaGraphs).toBe(one.perGpu.cudaGraphs);
    // 8 KV heads over 16 ranks: vLLM replicates, one head each, so the replica holds twice the cache.
    const sixteen = estimateMemory(llama8b, { contextLength: 8192, tensorParallelSize: 16 });
    expect(sixteen.kvCache).toBe(2 * one.kvCache);
  });

  it('halves the KV cache with an fp8 cache and drops CUDA graphs under enforceEager', () => {
    const auto = estimateMemory(llama8b, { contextLength: 8192 });
    const fp8 = estimateMemory(llama8b, { contextLength: 8192, kvCacheDtype: 'fp8', enforceEager: true });
    expect(fp8.kvCache).toBe(auto.kvCache / 2);
    expect(fp8.cudaGraphs).toBe(0);
  });

  it("caps Gemma-2's sliding-window layers at window − 1 + max_num_batched_tokens, like vLLM's SlidingWindowSpec", () => {
    const gemma = fixture('gemma-2-9b');
    expect(gemma.shape.layerAttention.filter((a) => a === 'sliding')).toHaveLength(21);
    const perTokenLayer = 8 * 256 * 2 * 2;
    const full = 21 * (8192 / 16) * 16 * perTokenLayer;
    const sliding = 21 * (Math.ceil(Math.min(4096 - 1 + 512, 8192) / 16) + 1) * 16 * perTokenLayer;
    expect(kvCacheBytesPerRank(gemma.shape, { contextLength: 8192, concurrency: 1, dtypeBytes: 2, maxNumBatchedTokens: 512, tensorParallelSize: 1 })).toBe(full + sliding);
  });

  it('loads a float32 checkpoint in 16 bits, as vLLM does under --dtype auto', () => {
    const gemma = fixture('gemma-2-9b');
    const e = estimateMemory(gemma, { contextLength: 8192 });
    expect(e.checkpointBytes).toBe(gemma.weights.bytes);
    expect(e.weights).toBe(gemma.weights.bytes / 2);
  });

  it('names the option that is wrong', () => {
    expect(() => estimateMemory(llama8b, { contextLength: 0 })).toThrow('INVALID_ESTIMATE_OPTIONS: contextLength is 0; expected a positive integer');
    expect(() => estimateMemory(llama8b, { gpuMemoryUtilization: 1.5 })).toThrow('INVALID_ESTIMATE_OPTIONS: gpuMemoryUtilization is 1.5; expected a fraction in (0, 1]');
    expect(() => estimateMemory(llama8b, { kvCacheDtype: 'int3' })).toThrow(/^INVALID_ESTIMATE_OPTIONS: kvCacheDtype is "int3"; expected one of /);
  });
});

describe('chooseTensorParallelSize', () => {
  const gpu80 = 80 * GiB;

  it('picks the smallest power of two whose per-GPU need fits', () => {
    const llama70b = fixture('llama-3.1-70b');
    const choice = chooseTensorParallelSize(llama70b, { memoryBytes: gpu80, maxGpus: 8 }, { contextLength: 8192, concurrency: 8 });
    expect(choice.fits).toBe(true);
    if (!choice.fits) return;
    expect(choice.estimate.perGpu.total).toBeLessThanOrEqual(gpu80);
    const half = estimateMemory(llama70b, { contextLength: 8192, concurrency: 8, tensorParallelSize: choice.tensorParallelSize / 2 });
    expect(half.perGpu.total).toBeGreaterThan(gpu80);
    expect(choice.tensorParallelSize).toBe(4);
  });

  it('takes one GPU when the model fits on one', () => {
    const choice = chooseTensorParallelSize(fixture('llama-3.1-8b'), { memoryBytes: gpu80, maxGpus: 8 }, { contextLength: 8192 });
    expect(choice).toMatchObject({ fits: true, tensorParallelSize: 1 });
  });

  it('refuses with the numbers when the largest gang is too small', () => {
    const choice = chooseTensorParallelSize(fixture('deepseek-v3'), { memoryBytes: gpu80, maxGpus: 8 }, { contextLength: 32768 });
    expect(choice.fits).toBe(false);
    if (choice.fits) return;
    expect(choice.message).toMatch(
      /^INSUFFICIENT_GPU_MEMORY: needs \d+\.\d GiB per replica \(32768 tokens × 1 sequences\); the largest gang of 8 × 80\.0 GiB at 0\.9 utilisation gives 72\.0 GiB per GPU; at tensor-parallel 8 each GPU needs \d+\.\d GiB \(weights 78\.1, KV cache 2\.1, /,
    );
  });

  it('offers only sizes that divide the attention heads and suit the KV heads', () => {
    expect(tensorParallelCandidates(fixture('qwen2.5-7b').shape, 8)).toEqual([1, 2, 4]);
    expect(tensorParallelCandidates(fixture('llama-3.1-70b').shape, 16)).toEqual([1, 2, 4, 8, 16]);
  });
});
