import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GGMLQuantizationType } from '@huggingface/gguf';
import { describeArtifact } from './artifact';
import { GiB, estimateMemory } from './estimate';
import { ModelEstimateError } from './errors';
import { DirectoryRangeReader } from './range-reader';
import { llamaFamilyGgufTensors, writeSparseGguf, type GgufValue } from './__fixtures__/gguf-files';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'estimate-gguf-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const u32 = (n: number): GgufValue => ({ u32: n });

/** Meta-Llama-3.1-8B-Instruct-Q8_0.gguf (bartowski/Meta-Llama-3.1-8B-Instruct-GGUF): published as 8.54 GB. */
function writeLlama31Q8(file: string) {
  return writeSparseGguf(
    join(dir, file),
    {
      'general.architecture': { str: 'llama' },
      'general.name': { str: 'Meta Llama 3.1 8B Instruct' },
      'general.file_type': u32(7),
      'llama.block_count': u32(32),
      'llama.context_length': u32(131072),
      'llama.embedding_length': u32(4096),
      'llama.feed_forward_length': u32(14336),
      'llama.attention.head_count': u32(32),
      'llama.attention.head_count_kv': u32(8),
      'llama.rope.freq_base': { f32: 500000 },
      'llama.attention.layer_norm_rms_epsilon': { f32: 1e-5 },
      'llama.rope.dimension_count': u32(128),
      'llama.vocab_size': u32(128256),
      'general.alignment': u32(32),
    },
    llamaFamilyGgufTensors({ layers: 32, hidden: 4096, ffn: 14336, heads: 32, kvHeads: 8, headDim: 128, vocab: 128256, matrixType: GGMLQuantizationType.Q8_0, tied: false, ropeFreqs: 64 }),
  );
}

describe('GGUF artifacts', () => {
  it('sums Meta-Llama-3.1-8B-Instruct Q8_0 tensors to within 2 % of its published 8.54 GB, and reads its architecture keys', async () => {
    writeLlama31Q8('Meta-Llama-3.1-8B-Instruct-Q8_0.gguf');
    const description = await describeArtifact(new DirectoryRangeReader(dir), ['Meta-Llama-3.1-8B-Instruct-Q8_0.gguf', 'README.md']);
    expect(description.weights.source).toBe('gguf');
    expect(Math.abs(description.weights.bytes - 8.54e9) / 8.54e9).toBeLessThan(0.02);
    expect(Object.keys(description.weights.byDtype ?? {}).sort()).toEqual(['F32', 'Q8_0']);
    expect(description.shape).toMatchObject({ architecture: 'llama', layers: 32, hiddenSize: 4096, attentionHeads: 32, kvHeads: 8, headDim: 128, vocabSize: 128256, maxContextLength: 131072 });
    expect(estimateMemory(description, { contextLength: 8192 }).kvCacheBytesPerToken).toBe(2 * 32 * 8 * 128 * 2);
  });

  it('adds the tensors of later shards, which carry only split.* keys, to the first shard\'s', async () => {
    const tensors = llamaFamilyGgufTensors({ layers: 4, hidden: 256, ffn: 512, heads: 4, kvHeads: 2, headDim: 64, vocab: 1024, matrixType: GGMLQuantizationType.Q8_0, tied: false });
    const half = Math.floor(tensors.length / 2);
    const first = writeSparseGguf(
      join(dir, 'tiny-00001-of-00002.gguf'),
      {
        'general.architecture': { str: 'llama' },
        'llama.block_count': u32(4),
        'llama.context_length': u32(4096),
        'llama.embedding_length': u32(256),
        'llama.feed_forward_length': u32(512),
        'llama.attention.head_count': u32(4),
        'llama.attention.head_count_kv': u32(2),
        'llama.vocab_size': u32(1024),
        'split.no': u32(0),
        'split.count': u32(2),
      },
      tensors.slice(0, half),
    );
    const second = writeSparseGguf(join(dir, 'tiny-00002-of-00002.gguf'), { 'split.no': u32(1), 'split.count': u32(2) }, tensors.slice(half));
    const description = await describeArtifact(new DirectoryRangeReader(dir), ['tiny-00002-of-00002.gguf', 'tiny-00001-of-00002.gguf']);
    expect(description.weights.bytes).toBe(first.dataBytes + second.dataBytes);
    expect(description.shape).toMatchObject({ layers: 4, kvHeads: 2, headDim: 64, maxContextLength: 4096 });
  });

  it('refuses an artifact holding two different GGUF models, naming them', async () => {
    writeLlama31Q8('a-Q8_0.gguf');
    writeLlama31Q8('b-Q8_0.gguf');
    await expect(describeArtifact(new DirectoryRangeReader(dir), ['a-Q8_0.gguf', 'b-Q8_0.gguf'])).rejects.toThrow(
      'INVALID_GGUF: the artifact holds 2 GGUF models (a-Q8_0.gguf, b-Q8_0.gguf); narrow it to one with allowPatterns',
    );
  });

  it('rejects a file that is not GGUF with the reason and the path', async () => {
    const file = 'not-gguf.gguf';
    writeFileSync(join(dir, file), 'definitely not a gguf file, but long enough to be read');
    const error = await describeArtifact(new DirectoryRangeReader(dir), [file]).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ModelEstimateError);
    expect((error as ModelEstimateError).message).toMatch(/^INVALID_GGUF: not-gguf\.gguf: not a valid gguf file/);
  });

  /**
   * gpustack/gpustack#2101: gemma-3-27b-it-qat Q4 GGUF with --ctx-size 128000 was estimated at
   * 139 GB; the reporter ran it with --ctx-size 85000 in about 32 GB. Gemma-3 keeps a full KV cache
   * in one layer of six only (the others slide over 1024 tokens); that is what the estimate must see.
   */
  it('estimates gemma-3-27b Q4 at 85k context near the ~32 GB observed in gpustack#2101, not 139 GB', async () => {
    const file = 'gemma-3-27b-it-q4_0.gguf';
    writeSparseGguf(
      join(dir, file),
      {
        'general.architecture': { str: 'gemma3' },
        'gemma3.block_count': u32(62),
        'gemma3.context_length': u32(131072),
        'gemma3.embedding_length': u32(5376),
        'gemma3.feed_forward_length': u32(21504),
        'gemma3.attention.head_count': u32(32),
        'gemma3.attention.head_count_kv': u32(16),
        'gemma3.attention.key_length': u32(128),
        'gemma3.attention.value_length': u32(128),
        'gemma3.attention.sliding_window': u32(1024),
        'gemma3.vocab_size': u32(262144),
      },
      llamaFamilyGgufTensors({ layers: 62, hidden: 5376, ffn: 21504, heads: 32, kvHeads: 16, headDim: 128, vocab: 262144, matrixType: GGMLQuantizationType.Q4_0, tied: true, gemma3: true }),
    );
    const description = await describeArtifact(new DirectoryRangeReader(dir), [file]);
    expect(description.shape.layerAttention.filter((a) => a === 'full')).toHaveLength(10);
    const at85k = estimateMemory(description, { contextLength: 85000 });
    const at128k = estimateMemory(description, { contextLength: 128000 });
    expect(at85k.total / 1e9).toBeGreaterThan(24);
    expect(at85k.total / 1e9).toBeLessThan(40);
    expect(at128k.total / GiB).toBeLessThan(50);
  });
});
