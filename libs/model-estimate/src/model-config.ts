import { ModelEstimateError } from './errors';
import type { LayerAttention, LatentAttention, MixtureOfExperts, ModelShape, WeightQuantization } from './model-shape';
import { isRecord } from './safetensors';

/** The most a config.json may be; real ones are a few KiB (multimodal ones tens of KiB). */
export const MAX_MODEL_CONFIG_BYTES = 4 * 1024 * 1024;

type Json = Record<string, unknown>;

/**
 * Defaults of transformers' config classes that released config.json files leave out (the file
 * only lists values that differ): Gemma-3's text config (`Gemma3TextConfig`).
 */
const CONFIG_CLASS_DEFAULTS: Record<string, Json> = {
  gemma3_text: { vocab_size: 262208, max_position_embeddings: 131072, sliding_window_pattern: 6, tie_word_embeddings: true },
};

/**
 * Reads the shape of a decoder from a transformers `config.json`. Multimodal configs keep the
 * language model in `text_config` (Gemma 3, Llama 4, Qwen2.5-VL's newer layout, LLaVA); its
 * fields win over the top level, which still carries `torch_dtype` and `quantization_config`.
 */
export function parseModelConfig(text: string, path = 'config.json'): ModelShape {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw invalid(path, `not JSON (${(err as Error).message})`);
  }
  if (!isRecord(parsed)) throw invalid(path, 'not a JSON object');
  const top = parsed;
  const textConfig = isRecord(top['text_config']) ? top['text_config'] : undefined;
  const merged: Json = textConfig ? { ...top, ...textConfig } : top;
  const defaults = CONFIG_CLASS_DEFAULTS[String(merged['model_type'])] ?? {};
  const c: Json = { ...defaults, ...merged };
  const at = (field: string) => (textConfig && field in textConfig ? `text_config.${field}` : field);
  const field = new Fields(c, path, at);

  const architecture = field.str(['model_type']) ?? 'unknown';
  const layers = field.count(['num_hidden_layers', 'n_layer', 'num_layers']);
  const hiddenSize = field.count(['hidden_size', 'n_embd', 'd_model']);
  const attentionHeads = field.count(['num_attention_heads', 'n_head']);
  const vocabSize = field.count(['vocab_size', 'padded_vocab_size']);
  const intermediateSize = field.optionalCount(['intermediate_size', 'ffn_hidden_size', 'n_inner']) ?? 4 * hiddenSize;
  const kvHeads = field.optionalCount(['num_key_value_heads', 'multi_query_group_num', 'n_head_kv']) ?? attentionHeads;
  if (kvHeads > attentionHeads || attentionHeads % kvHeads !== 0) {
    throw invalid(path, `${at('num_key_value_heads')} is ${kvHeads}; expected a divisor of ${at('num_attention_heads')} (${attentionHeads})`);
  }
  const headDim = field.optionalCount(['head_dim', 'kv_channels']) ?? hiddenSize / attentionHeads;
  if (!Number.isInteger(headDim)) {
    throw invalid(path, `${at('hidden_size')} ${hiddenSize} is not divisible by ${at('num_attention_heads')} ${attentionHeads} and there is no head_dim`);
  }
  const mla = latentAttentionOf(field);
  const moe = mixtureOf(field, architecture, layers, at);
  const { layerAttention, slidingWindow } = slidingWindowOf(field, architecture, layers, at);
  const dtype = field.str(['torch_dtype', 'dtype']);

  return {
    architecture,
    layers,
    hiddenSize,
    intermediateSize,
    vocabSize,
    attentionHeads,
    kvHeads,
    headDim,
    valueHeadDim: headDim,
    dtype,
    // transformers' Gemma configs tie the LM head to the embeddings by default.
    tieWordEmbeddings: field.bool('tie_word_embeddings') ?? architecture.startsWith('gemma'),
    attentionBias: field.bool('attention_bias') ?? field.bool('qkv_bias') ?? architecture === 'qwen2',
    qkNorm: architecture === 'qwen3' || architecture === 'qwen3_moe',
    normsPerLayer: architecture.startsWith('gemma2') || architecture.startsWith('gemma3') ? 4 : 2,
    layerAttention,
    slidingWindow,
    mla,
    moe,
    quantization: quantizationOf(top['quantization_config'] ?? c['quantization_config'], path),
    maxContextLength: field.optionalCount(['max_position_embeddings', 'n_positions', 'seq_length']),
  };
}

function latentAttentionOf(field: Fields): LatentAttention | undefined {
  const kvLoraRank = field.optionalCount(['kv_lora_rank']);
  if (kvLoraRank === undefined) return undefined;
  return {
    kvLoraRank,
    qkRopeHeadDim: field.count(['qk_rope_head_dim']),
    qkNopeHeadDim: field.count(['qk_nope_head_dim']),
    vHeadDim: field.count(['v_head_dim']),
    qLoraRank: field.optionalCount(['q_lora_rank']),
  };
}

function mixtureOf(field: Fields, architecture: string, layers: number, at: (f: string) => string): MixtureOfExperts | undefined {
  const experts = field.optionalCount(['num_experts', 'num_local_experts', 'n_routed_experts', 'moe_num_experts']);
  if (experts === undefined || experts === 0) return undefined;
  const expertsPerToken = field.count(['num_experts_per_tok', 'num_experts_per_token', 'moe_topk', 'top_k']);
  if (expertsPerToken > experts) {
    throw field.fail(`${at('num_experts_per_tok')} is ${expertsPerToken}; expected at most the ${experts} experts`);
  }
  const expertIntermediateSize = field.optionalCount(['moe_intermediate_size']) ?? field.count(['intermediate_size']);
  const sharedGateSize = field.optionalCount(['shared_expert_intermediate_size']);
  const sharedExperts = field.optionalCount(['n_shared_experts', 'num_shared_experts']) ?? 0;
  const sharedIntermediateSize = sharedGateSize ?? sharedExperts * expertIntermediateSize;

  // DeepSeek: the first `first_k_dense_replace` layers are dense, then every `moe_layer_freq`-th.
  // Qwen-MoE: every `decoder_sparse_step`-th layer (1-based) unless listed in `mlp_only_layers`.
  const firstDense = field.optionalCount(['first_k_dense_replace']) ?? 0;
  const frequency = field.optionalCount(['moe_layer_freq']) ?? 1;
  const sparseStep = field.optionalCount(['decoder_sparse_step']) ?? 1;
  const mlpOnly = new Set(field.countList('mlp_only_layers'));
  const moeLayers = Array.from({ length: layers }, (_, i) =>
    i >= firstDense && i % Math.max(1, frequency) === 0 && (i + 1) % Math.max(1, sparseStep) === 0 && !mlpOnly.has(i),
  );
  return {
    experts,
    expertsPerToken,
    expertIntermediateSize,
    sharedIntermediateSize,
    sharedExpertGate: sharedGateSize !== undefined && architecture.startsWith('qwen2_moe'),
    moeLayers,
  };
}

/**
 * Which layers use a sliding window. Explicit `layer_types` wins; Gemma-2 alternates sliding and
 * global layers starting with a sliding one; Gemma-3 makes every `sliding_window_pattern`-th layer
 * global; Qwen2 honours `use_sliding_window` (false in every released checkpoint); otherwise a
 * `sliding_window` applies to every layer (Mistral-7B-v0.1, Phi-3).
 */
function slidingWindowOf(field: Fields, architecture: string, layers: number, at: (f: string) => string): { layerAttention: LayerAttention[]; slidingWindow?: number } {
  const allFull: LayerAttention[] = Array.from({ length: layers }, () => 'full');
  const window = field.optionalCount(['sliding_window']);
  const types = field.raw('layer_types');
  if (Array.isArray(types)) {
    if (types.length !== layers || !types.every((t) => typeof t === 'string')) {
      throw field.fail(`${at('layer_types')} has ${types.length} entries; expected ${layers} strings (one per layer)`);
    }
    const layerAttention = (types as string[]).map((t): LayerAttention => (t === 'sliding_attention' ? 'sliding' : 'full'));
    if (!layerAttention.includes('sliding')) return { layerAttention };
    if (window === undefined) throw field.fail(`${at('layer_types')} lists sliding_attention layers but sliding_window is missing`);
    return { layerAttention, slidingWindow: window };
  }
  if (window === undefined || window === 0) return { layerAttention: allFull };
  if (field.bool('use_sliding_window') === false) return { layerAttention: allFull };
  if (architecture.startsWith('gemma2')) {
    return { layerAttention: allFull.map((_, i) => (i % 2 === 0 ? 'sliding' : 'full')), slidingWindow: window };
  }
  const pattern = field.optionalCount(['sliding_window_pattern']);
  if (pattern !== undefined && pattern > 0) {
    return { layerAttention: allFull.map((_, i) => ((i + 1) % pattern === 0 ? 'full' : 'sliding')), slidingWindow: window };
  }
  return { layerAttention: allFull.map(() => 'sliding'), slidingWindow: window };
}

/** Bits per weight of a quantized checkpoint (GPTQ, AWQ, bitsandbytes, FP8, compressed-tensors). */
function quantizationOf(raw: unknown, path: string): WeightQuantization | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!isRecord(raw)) throw invalid(path, 'quantization_config is not an object');
  const method = typeof raw['quant_method'] === 'string' ? raw['quant_method'] : 'unknown';
  const bits = raw['bits'] ?? raw['w_bit'] ?? raw['weight_bits'];
  if (typeof bits === 'number') {
    if (!(bits > 0 && bits <= 32)) throw invalid(path, `quantization_config.bits is ${bits}; expected 1..32`);
    return { method, bits };
  }
  if (raw['load_in_4bit'] === true) return { method, bits: 4 };
  if (raw['load_in_8bit'] === true) return { method, bits: 8 };
  if (method === 'fp8' || method === 'fbgemm_fp8') return { method, bits: 8 };
  const groups = raw['config_groups'];
  if (isRecord(groups)) {
    for (const group of Object.values(groups)) {
      if (isRecord(group) && isRecord(group['weights']) && typeof group['weights']['num_bits'] === 'number') {
        return { method, bits: group['weights']['num_bits'] };
      }
    }
  }
  if (method === 'mxfp4') return { method, bits: 4.25 };
  return undefined;
}

/** Field access that names the field and what was expected when a value is wrong. */
class Fields {
  constructor(
    private readonly c: Json,
    private readonly path: string,
    private readonly at: (field: string) => string,
  ) {}

  raw(name: string): unknown {
    return this.c[name];
  }

  str(names: string[]): string | undefined {
    for (const name of names) {
      const value = this.c[name];
      if (typeof value === 'string') return value;
    }
    return undefined;
  }

  bool(name: string): boolean | undefined {
    const value = this.c[name];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'boolean') throw this.fail(`${this.at(name)} is ${JSON.stringify(value)}; expected true or false`);
    return value;
  }

  count(names: string[]): number {
    const value = this.optionalCount(names);
    if (value === undefined || value === 0) {
      throw this.fail(`${this.at(names[0])} is ${value === 0 ? '0' : 'missing'}; expected a positive integer`);
    }
    return value;
  }

  optionalCount(names: string[]): number | undefined {
    for (const name of names) {
      const value = this.c[name];
      if (value === undefined || value === null) continue;
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
        throw this.fail(`${this.at(name)} is ${JSON.stringify(value)}; expected a non-negative integer`);
      }
      return value;
    }
    return undefined;
  }

  countList(name: string): number[] {
    const value = this.c[name];
    if (value === undefined || value === null) return [];
    if (!Array.isArray(value) || !value.every((v) => Number.isSafeInteger(v))) {
      throw this.fail(`${this.at(name)} is ${JSON.stringify(value)}; expected an array of layer indexes`);
    }
    return value as number[];
  }

  fail(detail: string): ModelEstimateError {
    return invalid(this.path, detail);
  }
}

function invalid(path: string, detail: string): ModelEstimateError {
  return new ModelEstimateError('INVALID_MODEL_CONFIG', `${path}: ${detail}`);
}
