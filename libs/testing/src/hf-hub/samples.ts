/**
 * Sample repositories for an offline stack (`gpufleet up --sample-hub`) and its demos: a tiny
 * Llama-shaped model whose files are what an engine and a memory estimate read on a real one (a
 * transformers config.json, a byte-level BPE tokenizer in the `tokenizers` format, a safetensors
 * file with a valid header and real bf16 weights) and the same model as a GGUF file. Every byte is
 * generated from constants, so the commits (and manifest digests) are the same on every run.
 */
import { createHash } from 'node:crypto';
import type { HubRepoSpec } from './repos';

/** The shape of the sample model: small enough that every file is generated in memory (≈ 0.3 MB). */
const SHAPE = {
  hidden: 64,
  intermediate: 128,
  layers: 2,
  heads: 4,
  kvHeads: 2,
  headDim: 16,
  contextLength: 2048,
  ropeTheta: 10000,
  rmsNormEps: 1e-5,
} as const;

/** 256 byte tokens, then the special ones. */
const SPECIAL_TOKENS = ['<|begin_of_text|>', '<|end_of_text|>', '<|start_header_id|>', '<|end_header_id|>'] as const;
const VOCAB = 256 + SPECIAL_TOKENS.length;
const BOS = 256;
const EOS = 257;

export const SAMPLE_LLAMA_REPO = 'sample/tiny-llama';
export const SAMPLE_LLAMA_GGUF_REPO = 'sample/tiny-llama-gguf';

/** A tensor as transformers names and shapes it (rows first). */
interface SampleTensor {
  readonly name: string;
  readonly shape: readonly number[];
  /** RMSNorm weights start at 1; every other weight is small noise. */
  readonly norm: boolean;
}

function llamaTensors(): SampleTensor[] {
  const { hidden: h, intermediate: f, heads, kvHeads, headDim: d } = SHAPE;
  const out: SampleTensor[] = [{ name: 'model.embed_tokens.weight', shape: [VOCAB, h], norm: false }];
  for (let i = 0; i < SHAPE.layers; i++) {
    const p = `model.layers.${i}`;
    out.push(
      { name: `${p}.input_layernorm.weight`, shape: [h], norm: true },
      { name: `${p}.self_attn.q_proj.weight`, shape: [heads * d, h], norm: false },
      { name: `${p}.self_attn.k_proj.weight`, shape: [kvHeads * d, h], norm: false },
      { name: `${p}.self_attn.v_proj.weight`, shape: [kvHeads * d, h], norm: false },
      { name: `${p}.self_attn.o_proj.weight`, shape: [h, heads * d], norm: false },
      { name: `${p}.post_attention_layernorm.weight`, shape: [h], norm: true },
      { name: `${p}.mlp.gate_proj.weight`, shape: [f, h], norm: false },
      { name: `${p}.mlp.up_proj.weight`, shape: [f, h], norm: false },
      { name: `${p}.mlp.down_proj.weight`, shape: [h, f], norm: false },
    );
  }
  out.push({ name: 'model.norm.weight', shape: [h], norm: true }, { name: 'lm_head.weight', shape: [VOCAB, h], norm: false });
  return out;
}

const elementsOf = (t: SampleTensor) => t.shape.reduce((a, b) => a * b, 1);

/** Deterministic weights in [-0.05, 0.05) (1 for norms), from SHA-256 of the tensor's name in counter mode. */
function weightsOf(t: SampleTensor): Float32Array {
  const out = new Float32Array(elementsOf(t));
  if (t.norm) return out.fill(1);
  let block: Buffer = Buffer.alloc(0);
  for (let i = 0; i < out.length; i++) {
    const at = (i * 4) % 32;
    if (at === 0) block = createHash('sha256').update(`${t.name}\0${i / 8}`).digest();
    out[i] = (block.readUInt32LE(at) / 2 ** 32 - 0.5) / 10;
  }
  return out;
}

/** bf16: the upper half of the float32 (truncated), as transformers stores a bfloat16 checkpoint. */
function bf16Bytes(values: Float32Array): Buffer {
  const f32 = Buffer.from(values.buffer, values.byteOffset, values.byteLength);
  const out = Buffer.alloc(values.length * 2);
  for (let i = 0; i < values.length; i++) out.writeUInt16LE(f32.readUInt16LE(i * 4 + 2), i * 2);
  return out;
}

/**
 * A safetensors file: the u64 little-endian header length, the JSON header (padded with spaces to
 * a multiple of 8, as the safetensors library writes it), then the tensors back to back.
 */
export function safetensorsFile(tensors: ReadonlyArray<{ name: string; dtype: string; shape: readonly number[]; data: Buffer }>, metadata: Record<string, string> = {}): Buffer {
  const header: Record<string, unknown> = { __metadata__: metadata };
  let offset = 0;
  for (const t of tensors) {
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + t.data.length] };
    offset += t.data.length;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (Buffer.byteLength(json) % 8)) % 8);
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  return Buffer.concat([prefix, Buffer.from(json), ...tensors.map((t) => t.data)]);
}

/** GPT-2's byte-to-unicode table, which byte-level BPE vocabularies are spelled in. */
function byteLevelAlphabet(): string[] {
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const out: string[] = [];
  let shifted = 0;
  for (let b = 0; b < 256; b++) out.push(String.fromCodePoint(printable(b) ? b : 256 + shifted++));
  return out;
}

/** A byte-level BPE tokenizer (`tokenizers` JSON): every byte is a token, plus the special tokens; no merges. */
function tokenizerJson(): string {
  const vocab: Record<string, number> = {};
  byteLevelAlphabet().forEach((symbol, id) => (vocab[symbol] = id));
  SPECIAL_TOKENS.forEach((token, i) => (vocab[token] = 256 + i));
  return JSON.stringify(
    {
      version: '1.0',
      truncation: null,
      padding: null,
      added_tokens: SPECIAL_TOKENS.map((content, i) => ({ id: 256 + i, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
      normalizer: null,
      pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
      post_processor: {
        type: 'TemplateProcessing',
        single: [{ SpecialToken: { id: SPECIAL_TOKENS[0], type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
        pair: [{ SpecialToken: { id: SPECIAL_TOKENS[0], type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
        special_tokens: { [SPECIAL_TOKENS[0]]: { id: SPECIAL_TOKENS[0], ids: [BOS], tokens: [SPECIAL_TOKENS[0]] } },
      },
      decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
      model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges: [] },
    },
    null,
    2,
  );
}

const CHAT_TEMPLATE =
  "{{ bos_token }}{% for message in messages %}<|start_header_id|>{{ message['role'] }}<|end_header_id|>\n\n{{ message['content'] }}{{ eos_token }}{% endfor %}" +
  '{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}';

function llamaConfig(): Record<string, unknown> {
  return {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    hidden_size: SHAPE.hidden,
    intermediate_size: SHAPE.intermediate,
    num_hidden_layers: SHAPE.layers,
    num_attention_heads: SHAPE.heads,
    num_key_value_heads: SHAPE.kvHeads,
    head_dim: SHAPE.headDim,
    vocab_size: VOCAB,
    max_position_embeddings: SHAPE.contextLength,
    rms_norm_eps: SHAPE.rmsNormEps,
    rope_theta: SHAPE.ropeTheta,
    hidden_act: 'silu',
    attention_bias: false,
    mlp_bias: false,
    tie_word_embeddings: false,
    bos_token_id: BOS,
    eos_token_id: EOS,
    torch_dtype: 'bfloat16',
    transformers_version: '4.46.0',
  };
}

/** The tiny Llama's checkpoint, one safetensors file in bf16. */
export function sampleLlamaSafetensors(): Buffer {
  return safetensorsFile(
    llamaTensors().map((t) => ({ name: t.name, dtype: 'BF16', shape: t.shape, data: bf16Bytes(weightsOf(t)) })),
    { format: 'pt' },
  );
}

// GGUF v3 (llama.cpp's gguf.md): magic, version, tensor count, KV count, KV pairs, tensor infos,
// padding to general.alignment, the tensor data (each tensor aligned).
const GGUF_ALIGNMENT = 32;
const GGUF_TYPE = { u32: 4, i32: 5, f32: 6, string: 8, array: 9 } as const;
const GGML_F32 = 0;

type GgufValue = { u32: number } | { f32: number } | { str: string } | { strings: readonly string[] } | { i32s: readonly number[] };

class GgufWriter {
  private readonly parts: Buffer[] = [];
  u32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n);
    this.parts.push(b);
  }
  u64(n: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(n));
    this.parts.push(b);
  }
  str(s: string): void {
    const bytes = Buffer.from(s);
    this.u64(bytes.length);
    this.parts.push(bytes);
  }
  value(v: GgufValue): void {
    if ('u32' in v) {
      this.u32(GGUF_TYPE.u32);
      this.u32(v.u32);
    } else if ('f32' in v) {
      this.u32(GGUF_TYPE.f32);
      const b = Buffer.alloc(4);
      b.writeFloatLE(v.f32);
      this.parts.push(b);
    } else if ('str' in v) {
      this.u32(GGUF_TYPE.string);
      this.str(v.str);
    } else if ('strings' in v) {
      this.u32(GGUF_TYPE.array);
      this.u32(GGUF_TYPE.string);
      this.u64(v.strings.length);
      for (const s of v.strings) this.str(s);
    } else {
      this.u32(GGUF_TYPE.array);
      this.u32(GGUF_TYPE.i32);
      this.u64(v.i32s.length);
      for (const n of v.i32s) {
        const b = Buffer.alloc(4);
        b.writeInt32LE(n);
        this.parts.push(b);
      }
    }
  }
  raw(b: Buffer): void {
    this.parts.push(b);
  }
  padTo(alignment: number): void {
    const length = this.length();
    this.parts.push(Buffer.alloc((alignment - (length % alignment)) % alignment));
  }
  length(): number {
    return this.parts.reduce((n, p) => n + p.length, 0);
  }
  bytes(): Buffer {
    return Buffer.concat(this.parts);
  }
}

/** llama.cpp's name of a transformers tensor (convert_hf_to_gguf.py, LLM_ARCH_LLAMA). */
function ggufNameOf(name: string): string {
  const renames: Array<[RegExp, string]> = [
    [/^model\.embed_tokens\.weight$/, 'token_embd.weight'],
    [/^model\.norm\.weight$/, 'output_norm.weight'],
    [/^lm_head\.weight$/, 'output.weight'],
    [/^model\.layers\.(\d+)\.input_layernorm\.weight$/, 'blk.$1.attn_norm.weight'],
    [/^model\.layers\.(\d+)\.self_attn\.q_proj\.weight$/, 'blk.$1.attn_q.weight'],
    [/^model\.layers\.(\d+)\.self_attn\.k_proj\.weight$/, 'blk.$1.attn_k.weight'],
    [/^model\.layers\.(\d+)\.self_attn\.v_proj\.weight$/, 'blk.$1.attn_v.weight'],
    [/^model\.layers\.(\d+)\.self_attn\.o_proj\.weight$/, 'blk.$1.attn_output.weight'],
    [/^model\.layers\.(\d+)\.post_attention_layernorm\.weight$/, 'blk.$1.ffn_norm.weight'],
    [/^model\.layers\.(\d+)\.mlp\.gate_proj\.weight$/, 'blk.$1.ffn_gate.weight'],
    [/^model\.layers\.(\d+)\.mlp\.up_proj\.weight$/, 'blk.$1.ffn_up.weight'],
    [/^model\.layers\.(\d+)\.mlp\.down_proj\.weight$/, 'blk.$1.ffn_down.weight'],
  ];
  for (const [from, to] of renames) if (from.test(name)) return name.replace(from, to);
  throw new Error(`sample GGUF: no llama.cpp name for ${name}`);
}

/** The tiny Llama as one GGUF v3 file in F32, with its byte-level vocabulary. */
export function sampleLlamaGguf(): Buffer {
  const metadata: Record<string, GgufValue> = {
    'general.architecture': { str: 'llama' },
    'general.name': { str: 'tiny-llama' },
    'general.alignment': { u32: GGUF_ALIGNMENT },
    'llama.context_length': { u32: SHAPE.contextLength },
    'llama.embedding_length': { u32: SHAPE.hidden },
    'llama.block_count': { u32: SHAPE.layers },
    'llama.feed_forward_length': { u32: SHAPE.intermediate },
    'llama.attention.head_count': { u32: SHAPE.heads },
    'llama.attention.head_count_kv': { u32: SHAPE.kvHeads },
    'llama.attention.key_length': { u32: SHAPE.headDim },
    'llama.attention.value_length': { u32: SHAPE.headDim },
    'llama.rope.freq_base': { f32: SHAPE.ropeTheta },
    'llama.attention.layer_norm_rms_epsilon': { f32: SHAPE.rmsNormEps },
    'llama.vocab_size': { u32: VOCAB },
    'tokenizer.ggml.model': { str: 'gpt2' },
    'tokenizer.ggml.tokens': { strings: [...byteLevelAlphabet(), ...SPECIAL_TOKENS] },
    // llama.cpp's token types: 1 normal, 3 control.
    'tokenizer.ggml.token_type': { i32s: [...new Array<number>(256).fill(1), ...SPECIAL_TOKENS.map(() => 3)] },
    'tokenizer.ggml.bos_token_id': { u32: BOS },
    'tokenizer.ggml.eos_token_id': { u32: EOS },
  };
  const tensors = llamaTensors().map((t) => ({ name: ggufNameOf(t.name), dims: [...t.shape].reverse(), data: Buffer.from(weightsOf(t).buffer) }));
  const w = new GgufWriter();
  w.raw(Buffer.from('GGUF'));
  w.u32(3);
  w.u64(tensors.length);
  w.u64(Object.keys(metadata).length);
  for (const [key, value] of Object.entries(metadata)) {
    w.str(key);
    w.value(value);
  }
  let offset = 0;
  const aligned = (n: number) => Math.ceil(n / GGUF_ALIGNMENT) * GGUF_ALIGNMENT;
  for (const t of tensors) {
    w.str(t.name);
    w.u32(t.dims.length);
    for (const dim of t.dims) w.u64(dim);
    w.u32(GGML_F32);
    w.u64(offset);
    offset += aligned(t.data.length);
  }
  w.padTo(GGUF_ALIGNMENT);
  for (const t of tensors) {
    w.raw(t.data);
    w.padTo(GGUF_ALIGNMENT);
  }
  return w.bytes();
}

const json = (value: unknown) => ({ bytes: `${JSON.stringify(value, null, 2)}\n` });

/** The repositories `gpufleet up --sample-hub` serves: `sample/tiny-llama` (safetensors) and `sample/tiny-llama-gguf`. */
export function sampleHubRepos(): HubRepoSpec[] {
  const readme = (what: string) => ({
    bytes: `---\nlicense: apache-2.0\nlibrary_name: transformers\npipeline_tag: text-generation\n---\n# ${what}\n\nA tiny Llama-shaped model generated by gpufleet's hub simulator for offline demos: ${SHAPE.layers} layers, hidden size ${SHAPE.hidden}, a byte-level vocabulary of ${VOCAB} tokens. Its weights are deterministic noise; it is for moving and loading, not for answers.\n`,
  });
  return [
    {
      id: SAMPLE_LLAMA_REPO,
      commits: [
        {
          title: 'tiny llama, bf16 safetensors',
          files: [
            { path: 'README.md', content: readme('tiny-llama') },
            { path: 'config.json', content: json(llamaConfig()) },
            { path: 'generation_config.json', content: json({ bos_token_id: BOS, eos_token_id: EOS, do_sample: true, temperature: 0.6, top_p: 0.9, transformers_version: '4.46.0' }) },
            { path: 'tokenizer.json', content: { bytes: tokenizerJson() } },
            {
              path: 'tokenizer_config.json',
              content: json({ bos_token: SPECIAL_TOKENS[0], eos_token: SPECIAL_TOKENS[1], pad_token: null, add_bos_token: true, add_eos_token: false, model_max_length: SHAPE.contextLength, tokenizer_class: 'PreTrainedTokenizerFast', chat_template: CHAT_TEMPLATE, clean_up_tokenization_spaces: false }),
            },
            { path: 'special_tokens_map.json', content: json({ bos_token: SPECIAL_TOKENS[0], eos_token: SPECIAL_TOKENS[1] }) },
            { path: 'model.safetensors', content: { bytes: sampleLlamaSafetensors() } },
          ],
        },
      ],
    },
    {
      id: SAMPLE_LLAMA_GGUF_REPO,
      commits: [
        {
          title: 'tiny llama, F32 GGUF',
          files: [
            { path: 'README.md', content: readme('tiny-llama-gguf') },
            { path: 'tiny-llama-F32.gguf', content: { bytes: sampleLlamaGguf() } },
          ],
        },
      ],
    },
  ];
}
