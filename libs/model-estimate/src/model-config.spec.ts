import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseModelConfig } from './model-config';

const real = (name: string) => parseModelConfig(readFileSync(join(__dirname, '__fixtures__', name, 'config.json'), 'utf8'));

describe('parseModelConfig', () => {
  it('reads GQA heads, head_dim and dtype (Llama-3.1-8B)', () => {
    expect(real('llama-3.1-8b')).toMatchObject({ architecture: 'llama', layers: 32, hiddenSize: 4096, intermediateSize: 14336, vocabSize: 128256, attentionHeads: 32, kvHeads: 8, headDim: 128, dtype: 'bfloat16', tieWordEmbeddings: false, maxContextLength: 131072 });
  });

  it('reads MoE experts (Mixtral, Qwen3-MoE) and DeepSeek shared experts with dense first layers', () => {
    expect(real('mixtral-8x7b-v0.1').moe).toMatchObject({ experts: 8, expertsPerToken: 2, expertIntermediateSize: 14336, sharedIntermediateSize: 0 });
    expect(real('qwen3-30b-a3b').moe).toMatchObject({ experts: 128, expertsPerToken: 8, expertIntermediateSize: 768 });
    const lite = real('deepseek-v2-lite');
    expect(lite.moe).toMatchObject({ experts: 64, expertsPerToken: 6, expertIntermediateSize: 1408, sharedIntermediateSize: 2 * 1408 });
    expect(lite.moe?.moeLayers.slice(0, 3)).toEqual([false, true, true]);
    expect(lite.mla).toEqual({ kvLoraRank: 512, qkRopeHeadDim: 64, qkNopeHeadDim: 128, vHeadDim: 128, qLoraRank: undefined });
  });

  it('reads the language model of a multimodal config from text_config, with the config class defaults', () => {
    const gemma3 = real('gemma-3-27b-it');
    expect(gemma3).toMatchObject({ architecture: 'gemma3_text', layers: 62, hiddenSize: 5376, kvHeads: 16, headDim: 128, vocabSize: 262208, slidingWindow: 1024, dtype: 'bfloat16', tieWordEmbeddings: true });
    expect(gemma3.layerAttention.filter((a) => a === 'full')).toHaveLength(10);
  });

  it('honours use_sliding_window: false (Qwen2.5) and a window on every layer (Phi-3)', () => {
    expect(real('qwen2.5-7b').slidingWindow).toBeUndefined();
    expect(real('qwen2.5-7b').attentionBias).toBe(true);
    const phi3 = real('phi-3-mini-4k-instruct');
    expect(phi3.slidingWindow).toBe(2047);
    expect(phi3.layerAttention.every((a) => a === 'sliding')).toBe(true);
  });

  it('reads quantization bits (FP8 DeepSeek-V3, GPTQ/AWQ bits, bitsandbytes)', () => {
    expect(real('deepseek-v3').quantization).toEqual({ method: 'fp8', bits: 8 });
    const base = { model_type: 'llama', num_hidden_layers: 2, hidden_size: 64, num_attention_heads: 4, vocab_size: 100 };
    expect(parseModelConfig(JSON.stringify({ ...base, quantization_config: { quant_method: 'awq', bits: 4 } })).quantization).toEqual({ method: 'awq', bits: 4 });
    expect(parseModelConfig(JSON.stringify({ ...base, quantization_config: { quant_method: 'bitsandbytes', load_in_4bit: true } })).quantization).toEqual({ method: 'bitsandbytes', bits: 4 });
  });

  it.each([
    [{ hidden_size: 64, num_attention_heads: 4, vocab_size: 100 }, 'config.json: num_hidden_layers is missing; expected a positive integer'],
    [{ num_hidden_layers: '32', hidden_size: 64, num_attention_heads: 4, vocab_size: 100 }, 'config.json: num_hidden_layers is "32"; expected a non-negative integer'],
    [{ num_hidden_layers: 2, hidden_size: 64, num_attention_heads: 4, num_key_value_heads: 3, vocab_size: 100 }, 'config.json: num_key_value_heads is 3; expected a divisor of num_attention_heads (4)'],
    [{ text_config: { num_hidden_layers: 0, hidden_size: 64, num_attention_heads: 4, vocab_size: 100 } }, 'config.json: text_config.num_hidden_layers is 0; expected a positive integer'],
  ])('names the field that is wrong: %j', (config, message) => {
    expect(() => parseModelConfig(JSON.stringify(config))).toThrow(`INVALID_MODEL_CONFIG: ${message}`);
  });
});
