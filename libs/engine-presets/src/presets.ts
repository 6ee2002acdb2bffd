/**
 * Tuned starting points per engine and mode. Latency presets keep batches small so each
 * sequence gets more of every step (lower inter-token latency) and prefill in small chunks
 * so a long prompt stalls running decodes less; throughput presets admit many sequences and
 * prefill in large chunks to keep the accelerator saturated. docs/engines.md explains each number.
 */
import type { EngineKind, EngineMode, SpeculativeMethod } from './engine-spec';

export interface EnginePreset {
  /** Sequences batched at once (vLLM --max-num-seqs, SGLang --max-running-requests, TRT-LLM --max_batch_size, llama.cpp --parallel). */
  readonly maxConcurrency: number;
  /** Fraction of accelerator memory the engine may claim (weights + KV cache); absent where the engine has no such knob. */
  readonly memoryFraction?: number;
  /** Prompt tokens prefilled per step (chunked prefill); absent where the engine has no such knob. */
  readonly prefillChunkTokens?: number;
  /** llama.cpp only: total context, tokens, shared by all slots. */
  readonly contextTokens?: number;
}

export type PresetEngine = Exclude<EngineKind, 'custom'>;

export const ENGINE_PRESETS: Readonly<Record<PresetEngine, Readonly<Record<EngineMode, EnginePreset>>>> = {
  vllm: {
    latency: { maxConcurrency: 32, memoryFraction: 0.9, prefillChunkTokens: 2048 },
    throughput: { maxConcurrency: 256, memoryFraction: 0.92, prefillChunkTokens: 8192 },
  },
  sglang: {
    latency: { maxConcurrency: 32, memoryFraction: 0.85, prefillChunkTokens: 2048 },
    throughput: { maxConcurrency: 256, memoryFraction: 0.88, prefillChunkTokens: 8192 },
  },
  trtllm: {
    latency: { maxConcurrency: 32, memoryFraction: 0.85, prefillChunkTokens: 2048 },
    throughput: { maxConcurrency: 256, memoryFraction: 0.9, prefillChunkTokens: 8192 },
  },
  'llama-cpp': {
    latency: { maxConcurrency: 4, contextTokens: 32768 },
    throughput: { maxConcurrency: 16, contextTokens: 65536 },
  },
};

/** Cards at or below this size (MiB) lose a larger share to CUDA context and graphs. */
export const SMALL_ACCELERATOR_MIB = 24576;
/** Memory fraction ceiling on small cards. */
export const SMALL_ACCELERATOR_MEMORY_FRACTION = 0.85;

/** Draft tokens per step when the spec does not say: a draft head is accurate enough for 3, MTP ships one extra head, n-gram lookups are cheap. */
export const DEFAULT_SPECULATIVE_TOKENS: Readonly<Record<SpeculativeMethod, number>> = {
  eagle3: 3,
  mtp: 1,
  ngram: 4,
};

/** Oldest releases whose flags the builders emit (vLLM: --speculative-config with eagle3/mtp; SGLang: EAGLE3; TRT-LLM: pytorch backend in trtllm-serve). */
export const MINIMUM_VERSIONS: Readonly<Partial<Record<EngineKind, string>>> = {
  vllm: '0.10.0',
  sglang: '0.4.6',
  trtllm: '1.0.0',
};

export function presetFor(engine: PresetEngine, mode: EngineMode, acceleratorMemoryMib?: number): EnginePreset {
  const preset = ENGINE_PRESETS[engine][mode];
  if (preset.memoryFraction === undefined || acceleratorMemoryMib === undefined || acceleratorMemoryMib > SMALL_ACCELERATOR_MIB) return preset;
  return { ...preset, memoryFraction: Math.min(preset.memoryFraction, SMALL_ACCELERATOR_MEMORY_FRACTION) };
}
