import { closeSync, ftruncateSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '@gpufleet/process-kit';

/**
 * Builds checkpoints on disk from a model's tensor list: real safetensors headers (and GGUF
 * headers) followed by sparse data, so a 141 GB checkpoint costs a few hundred KiB of disk and
 * only its header bytes are ever read. The tensor lists follow transformers' module names for
 * each architecture (see README.md); they are written here independently of the estimator's
 * parameter count so that the two check each other against the published sizes.
 */

/**
 * The vendored config.json of a real model (`libs/model-estimate/src/__fixtures__/<fixture>`,
 * where its README says where each comes from), as text.
 */
export function modelFixtureConfig(fixture: string): string {
  return readFileSync(join(REPO_ROOT, 'libs/model-estimate/src/__fixtures__', fixture, 'config.json'), 'utf8');
}

export interface TensorSpec {
  name: string;
  shape: number[];
}

type Config = Record<string, unknown>;

const num = (c: Config, key: string): number => {
  const value = c[key];
  if (typeof value !== 'number') throw new Error(`fixture config lacks ${key}`);
  return value;
};

/** The checkpoint's tensors, in the order transformers saves them, for the fixture architectures. */
export function tensorsOf(c: Config): TensorSpec[] {
  const type = String(c['model_type']);
  const h = num(c, 'hidden_size');
  const v = num(c, 'vocab_size');
  const heads = num(c, 'num_attention_heads');
  const kv = (c['num_key_value_heads'] as number | undefined) ?? heads;
  const hd = (c['head_dim'] as number | undefined) ?? h / heads;
  const inter = num(c, 'intermediate_size');
  const out: TensorSpec[] = [{ name: 'model.embed_tokens.weight', shape: [v, h] }];
  const t = (name: string, ...shape: number[]) => out.push({ name, shape });

  for (let i = 0; i < num(c, 'num_hidden_layers'); i++) {
    const p = `model.layers.${i}`;
    t(`${p}.input_layernorm.weight`, h);
    if (type === 'phi3') {
      t(`${p}.self_attn.qkv_proj.weight`, (heads + 2 * kv) * hd, h);
    } else if (type === 'deepseek_v2' || type === 'deepseek_v3') {
      const rope = num(c, 'qk_rope_head_dim');
      const qHead = num(c, 'qk_nope_head_dim') + rope;
      const kvLora = num(c, 'kv_lora_rank');
      const qLora = c['q_lora_rank'] as number | null;
      if (qLora) {
        t(`${p}.self_attn.q_a_proj.weight`, qLora, h);
        t(`${p}.self_attn.q_a_layernorm.weight`, qLora);
        t(`${p}.self_attn.q_b_proj.weight`, heads * qHead, qLora);
      } else {
        t(`${p}.self_attn.q_proj.weight`, heads * qHead, h);
      }
      t(`${p}.self_attn.kv_a_proj_with_mqa.weight`, kvLora + rope, h);
      t(`${p}.self_attn.kv_a_layernorm.weight`, kvLora);
      t(`${p}.self_attn.kv_b_proj.weight`, heads * (num(c, 'qk_nope_head_dim') + num(c, 'v_head_dim')), kvLora);
    } else {
      t(`${p}.self_attn.q_proj.weight`, heads * hd, h);
      if (type === 'qwen2') t(`${p}.self_attn.q_proj.bias`, heads * hd);
      t(`${p}.self_attn.k_proj.weight`, kv * hd, h);
      if (type === 'qwen2') t(`${p}.self_attn.k_proj.bias`, kv * hd);
      t(`${p}.self_attn.v_proj.weight`, kv * hd, h);
      if (type === 'qwen2') t(`${p}.self_attn.v_proj.bias`, kv * hd);
      if (type === 'qwen3' || type === 'qwen3_moe') {
        t(`${p}.self_attn.q_norm.weight`, hd);
        t(`${p}.self_attn.k_norm.weight`, hd);
      }
    }
    const vHeads = type.startsWith('deepseek') ? heads * num(c, 'v_head_dim') : heads * hd;
    t(`${p}.self_attn.o_proj.weight`, h, vHeads);
    t(`${p}.post_attention_layernorm.weight`, h);
    if (type === 'gemma2') {
      t(`${p}.pre_feedforward_layernorm.weight`, h);
      t(`${p}.post_feedforward_layernorm.weight`, h);
    }

    if (type === 'mixtral') {
      t(`${p}.block_sparse_moe.gate.weight`, num(c, 'num_local_experts'), h);
      for (let e = 0; e < num(c, 'num_local_experts'); e++) {
        t(`${p}.block_sparse_moe.experts.${e}.w1.weight`, inter, h);
        t(`${p}.block_sparse_moe.experts.${e}.w2.weight`, h, inter);
        t(`${p}.block_sparse_moe.experts.${e}.w3.weight`, inter, h);
      }
    } else if (type === 'qwen3_moe' || (type.startsWith('deepseek') && i >= num(c, 'first_k_dense_replace'))) {
      const experts = type === 'qwen3_moe' ? num(c, 'num_experts') : num(c, 'n_routed_experts');
      const mi = num(c, 'moe_intermediate_size');
      t(`${p}.mlp.gate.weight`, experts, h);
      for (let e = 0; e < experts; e++) {
        t(`${p}.mlp.experts.${e}.gate_proj.weight`, mi, h);
        t(`${p}.mlp.experts.${e}.up_proj.weight`, mi, h);
        t(`${p}.mlp.experts.${e}.down_proj.weight`, h, mi);
      }
      const shared = (c['n_shared_experts'] as number | undefined) ?? 0;
      if (shared > 0) {
        t(`${p}.mlp.shared_experts.gate_proj.weight`, mi * shared, h);
        t(`${p}.mlp.shared_experts.up_proj.weight`, mi * shared, h);
        t(`${p}.mlp.shared_experts.down_proj.weight`, h, mi * shared);
      }
    } else if (type === 'phi3') {
      t(`${p}.mlp.gate_up_proj.weight`, 2 * inter, h);
      t(`${p}.mlp.down_proj.weight`, h, inter);
    } else {
      t(`${p}.mlp.gate_proj.weight`, inter, h);
      t(`${p}.mlp.up_proj.weight`, inter, h);
      t(`${p}.mlp.down_proj.weight`, h, inter);
    }
  }
  t('model.norm.weight', h);
  const tied = (c['tie_word_embeddings'] as boolean | undefined) ?? type.startsWith('gemma');
  if (!tied) t('lm_head.weight', v, h);
  return out;
}

const DTYPE_BYTES: Record<string, number> = { BF16: 2, F16: 2, F32: 4 };

/** One safetensors file: the 8-byte length, the JSON header, then `dataBytes` of holes. */
export function writeSparseSafetensors(file: string, tensors: TensorSpec[], dtype: string, metadata: Record<string, string> = { format: 'pt' }): number {
  const header: Record<string, unknown> = { __metadata__: metadata };
  let offset = 0;
  for (const tensor of tensors) {
    const bytes = tensor.shape.reduce((a, b) => a * b, 1) * DTYPE_BYTES[dtype];
    header[tensor.name] = { dtype, shape: tensor.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  const json = Buffer.from(JSON.stringify(header));
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(json.length));
  const fd = openSync(file, 'w');
  try {
    writeSync(fd, prefix);
    writeSync(fd, json);
    ftruncateSync(fd, 8 + json.length + offset);
  } finally {
    closeSync(fd);
  }
  return offset;
}

export interface SparseCheckpoint {
  dir: string;
  files: string[];
  /** Sum of tensor bytes over the shards, as the headers declare them. */
  dataBytes: number;
  dispose(): void;
}

/**
 * A sharded checkpoint like the hub's: `model-0000N-of-0000M.safetensors` shards of about equal
 * size, `model.safetensors.index.json` with the weight map and the published `total_size`, and
 * the vendored config.json.
 */
export function writeSparseCheckpoint(fixture: string, options: { dtype: string; shards: number; totalSize?: number }): SparseCheckpoint {
  const configText = modelFixtureConfig(fixture);
  const tensors = tensorsOf(JSON.parse(configText) as Config);
  const dir = mkdtempSync(join(tmpdir(), `estimate-${fixture}-`));
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), configText);
  const bytesOf = (t: TensorSpec) => t.shape.reduce((a, b) => a * b, 1) * DTYPE_BYTES[options.dtype];
  const total = tensors.reduce((sum, t) => sum + bytesOf(t), 0);
  const target = total / options.shards;
  const name = (n: number) => `model-${String(n).padStart(5, '0')}-of-${String(options.shards).padStart(5, '0')}.safetensors`;
  const groups: TensorSpec[][] = Array.from({ length: options.shards }, () => []);
  let filled = 0;
  for (const tensor of tensors) {
    const shard = Math.min(options.shards - 1, Math.floor(filled / target));
    groups[shard].push(tensor);
    filled += bytesOf(tensor);
  }
  const weightMap: Record<string, string> = {};
  let dataBytes = 0;
  const files = ['config.json'];
  groups.forEach((group, i) => {
    dataBytes += writeSparseSafetensors(join(dir, name(i + 1)), group, options.dtype);
    for (const tensor of group) weightMap[tensor.name] = name(i + 1);
    files.push(name(i + 1));
  });
  if (options.shards > 1) {
    writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify({ metadata: { total_size: options.totalSize ?? dataBytes }, weight_map: weightMap }, null, 2));
    files.push('model.safetensors.index.json');
  }
  return { dir, files, dataBytes, dispose: () => rmSync(dir, { recursive: true, force: true }) };
}
