import { closeSync, ftruncateSync, openSync, writeSync } from 'node:fs';
import { GGMLQuantizationType } from '@huggingface/gguf';

/**
 * Writes GGUF v3 files (llama.cpp's `gguf.md` layout: magic, version, tensor and KV counts, the KV
 * pairs, tensor infos, padding to `general.alignment`, then data) whose data section is sparse.
 */

export type GgufValue = { u32: number } | { f32: number } | { str: string };

export interface GgufTensor {
  name: string;
  /** GGML order: the fastest-varying dimension first (transformers' shape reversed). */
  dims: number[];
  type: GGMLQuantizationType;
}

/** [block elements, block bytes] of the types the fixtures use (llama.cpp GGML_QUANT_SIZES). */
const BLOCK: Partial<Record<GGMLQuantizationType, [number, number]>> = {
  [GGMLQuantizationType.F32]: [1, 4],
  [GGMLQuantizationType.F16]: [1, 2],
  [GGMLQuantizationType.Q8_0]: [32, 34],
  [GGMLQuantizationType.Q4_0]: [32, 18],
};
const ALIGNMENT = 32;

export function ggufTensorBytes(tensor: GgufTensor): number {
  const [elements, bytes] = BLOCK[tensor.type] ?? [0, 0];
  if (!elements) throw new Error(`fixture writer lacks the size of type ${tensor.type}`);
  return (tensor.dims.reduce((a, b) => a * b, 1) / elements) * bytes;
}

export function writeSparseGguf(file: string, metadata: Record<string, GgufValue>, tensors: GgufTensor[]): { dataBytes: number; fileBytes: number } {
  const parts: Buffer[] = [];
  const u32 = (n: number) => { const b = Buffer.alloc(4); b.writeUInt32LE(n); parts.push(b); };
  const u64 = (n: number) => { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(n)); parts.push(b); };
  const str = (s: string) => { const bytes = Buffer.from(s); u64(bytes.length); parts.push(bytes); };

  parts.push(Buffer.from('GGUF'));
  u32(3);
  u64(tensors.length);
  u64(Object.keys(metadata).length);
  for (const [key, value] of Object.entries(metadata)) {
    str(key);
    if ('u32' in value) { u32(4); u32(value.u32); }
    else if ('f32' in value) { u32(6); const b = Buffer.alloc(4); b.writeFloatLE(value.f32); parts.push(b); }
    else { u32(8); str(value.str); }
  }
  let offset = 0;
  for (const tensor of tensors) {
    str(tensor.name);
    u32(tensor.dims.length);
    for (const dim of tensor.dims) u64(dim);
    u32(tensor.type);
    u64(offset);
    offset += Math.ceil(ggufTensorBytes(tensor) / ALIGNMENT) * ALIGNMENT;
  }
  const header = Buffer.concat(parts);
  const dataStart = Math.ceil(header.length / ALIGNMENT) * ALIGNMENT;
  const fd = openSync(file, 'w');
  try {
    writeSync(fd, header);
    ftruncateSync(fd, dataStart + offset);
  } finally {
    closeSync(fd);
  }
  return { dataBytes: tensors.reduce((sum, t) => sum + ggufTensorBytes(t), 0), fileBytes: dataStart + offset };
}

/** llama.cpp's tensor names for a Llama-family model (`convert_hf_to_gguf.py`, LLM_ARCH_LLAMA / GEMMA3). */
export function llamaFamilyGgufTensors(opts: {
  layers: number; hidden: number; ffn: number; heads: number; kvHeads: number; headDim: number; vocab: number;
  matrixType: GGMLQuantizationType; tied: boolean; gemma3?: boolean; ropeFreqs?: number;
}): GgufTensor[] {
  const { hidden: h, ffn, heads, kvHeads, headDim: hd, vocab, matrixType: q } = opts;
  const f32 = GGMLQuantizationType.F32;
  const out: GgufTensor[] = [{ name: 'token_embd.weight', dims: [h, vocab], type: q }];
  if (opts.ropeFreqs) out.push({ name: 'rope_freqs.weight', dims: [opts.ropeFreqs], type: f32 });
  for (let i = 0; i < opts.layers; i++) {
    const p = `blk.${i}`;
    out.push(
      { name: `${p}.attn_norm.weight`, dims: [h], type: f32 },
      { name: `${p}.attn_q.weight`, dims: [h, heads * hd], type: q },
      { name: `${p}.attn_k.weight`, dims: [h, kvHeads * hd], type: q },
      { name: `${p}.attn_v.weight`, dims: [h, kvHeads * hd], type: q },
      { name: `${p}.attn_output.weight`, dims: [heads * hd, h], type: q },
      { name: `${p}.ffn_norm.weight`, dims: [h], type: f32 },
      { name: `${p}.ffn_gate.weight`, dims: [h, ffn], type: q },
      { name: `${p}.ffn_up.weight`, dims: [h, ffn], type: q },
      { name: `${p}.ffn_down.weight`, dims: [ffn, h], type: q },
    );
    if (opts.gemma3) {
      out.push(
        { name: `${p}.attn_q_norm.weight`, dims: [hd], type: f32 },
        { name: `${p}.attn_k_norm.weight`, dims: [hd], type: f32 },
        { name: `${p}.post_attention_norm.weight`, dims: [h], type: f32 },
        { name: `${p}.post_ffw_norm.weight`, dims: [h], type: f32 },
      );
    }
  }
  out.push({ name: 'output_norm.weight', dims: [h], type: f32 });
  if (!opts.tied) out.push({ name: 'output.weight', dims: [h, vocab], type: q });
  return out;
}
