import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DirectoryRangeReader, type RangeReader } from './range-reader';
import { describeArtifact, weightsFromConfig } from './artifact';
import { estimateMemory } from './estimate';
import { parseModelConfig } from './model-config';
import { writeSparseCheckpoint, type SparseCheckpoint } from '@gpufleet/testing';

/**
 * Published sizes of real models (see __fixtures__/README.md for where each number comes from).
 * `published` is the hub index's `metadata.total_size` where one is given, otherwise the model
 * card's parameter count × bytes per parameter. `kvPerToken` is vLLM's formula written out by
 * hand: 2 × layers × kv_heads × head_dim × dtype bytes, or layers × (kv_lora_rank +
 * qk_rope_head_dim) × dtype bytes for MLA.
 */
const MODELS = [
  { fixture: 'llama-3.1-8b', dtype: 'BF16', shards: 4, totalSize: 16_060_522_496, kvPerToken: 2 * 32 * 8 * 128 * 2 },
  { fixture: 'llama-3.1-70b', dtype: 'BF16', shards: 30, totalSize: 141_107_412_992, kvPerToken: 2 * 80 * 8 * 128 * 2 },
  { fixture: 'mistral-7b-v0.3', dtype: 'BF16', shards: 3, totalSize: 14_496_047_104, kvPerToken: 2 * 32 * 8 * 128 * 2 },
  { fixture: 'mixtral-8x7b-v0.1', dtype: 'BF16', shards: 19, totalSize: 93_405_585_408, kvPerToken: 2 * 32 * 8 * 128 * 2 },
  { fixture: 'qwen2.5-7b', dtype: 'BF16', shards: 4, totalSize: 15_231_233_024, kvPerToken: 2 * 28 * 4 * 128 * 2 },
  { fixture: 'qwen2.5-72b', dtype: 'BF16', shards: 37, totalSize: 145_412_407_296, kvPerToken: 2 * 80 * 8 * 128 * 2 },
  { fixture: 'qwen3-30b-a3b', dtype: 'BF16', shards: 16, totalSize: 61_064_245_248, kvPerToken: 2 * 48 * 4 * 128 * 2 },
  { fixture: 'deepseek-v2-lite', dtype: 'BF16', shards: 4, totalSize: 31_412_968_448, kvPerToken: 27 * (512 + 64) * 2 },
  { fixture: 'gemma-2-9b', dtype: 'F32', shards: 8, totalSize: 9.24e9 * 4, kvPerToken: 2 * 42 * 8 * 256 * 2 },
  { fixture: 'phi-3-mini-4k-instruct', dtype: 'BF16', shards: 2, totalSize: 7_642_159_104, kvPerToken: 2 * 32 * 32 * 96 * 2 },
] as const;

/** Counts the reads, to hold the estimate to two range reads per safetensors shard. */
class CountingReader implements RangeReader {
  ranges = 0;
  constructor(private readonly inner: RangeReader) {}
  readRange(path: string, start: number, end: number) {
    this.ranges++;
    return this.inner.readRange(path, start, end);
  }
  readSmallFile(path: string, max: number) {
    return this.inner.readSmallFile(path, max);
  }
}

const within = (actual: number, expected: number, share: number) => Math.abs(actual - expected) / expected <= share;

describe.each(MODELS)('$fixture against its published size', (model) => {
  let checkpoint: SparseCheckpoint;
  beforeAll(() => {
    checkpoint = writeSparseCheckpoint(model.fixture, { dtype: model.dtype, shards: model.shards, totalSize: model.totalSize });
  });
  afterAll(() => checkpoint.dispose());

  it('sums the safetensors headers to within 2 % of the published total, with two range reads per shard', async () => {
    const reader = new CountingReader(new DirectoryRangeReader(checkpoint.dir));
    const description = await describeArtifact(reader, checkpoint.files);
    expect(description.weights.source).toBe('safetensors-headers');
    expect(within(description.weights.bytes, model.totalSize, 0.02)).toBe(true);
    expect(Object.keys(description.weights.byDtype ?? {})).toEqual([model.dtype]);
    expect(reader.ranges).toBe(2 * model.shards);
  });

  it('counts config.json parameters × dtype to within 2 % of the published total', () => {
    const shape = parseModelConfig(readFileSync(join(__dirname, '__fixtures__', model.fixture, 'config.json'), 'utf8'));
    expect(within(weightsFromConfig(shape).bytes, model.totalSize, 0.02)).toBe(true);
  });

  it('takes the index total_size when told not to read the shard headers', async () => {
    const description = await describeArtifact(new DirectoryRangeReader(checkpoint.dir), checkpoint.files, { readShardHeaders: false });
    expect(description.weights).toEqual({ bytes: model.totalSize, source: 'safetensors-index' });
  });

  it("sizes the KV cache per token by vLLM's formula", async () => {
    const description = await describeArtifact(new DirectoryRangeReader(checkpoint.dir), checkpoint.files, { readShardHeaders: false });
    expect(estimateMemory(description, { contextLength: 4096 }).kvCacheBytesPerToken).toBe(model.kvPerToken);
  });
});

describe('DeepSeek-V3 (MLA, 256 experts, FP8), from config.json alone', () => {
  const shape = parseModelConfig(readFileSync(join(__dirname, '__fixtures__', 'deepseek-v3', 'config.json'), 'utf8'));

  it('counts the 671B parameters of the model card at one byte each (fp8)', () => {
    const weights = weightsFromConfig(shape);
    expect(within(weights.parameters ?? 0, 671e9, 0.02)).toBe(true);
    expect(within(weights.bytes, 671e9, 0.02)).toBe(true);
  });

  it('caches one 576-wide latent per layer and token, replicated on every rank', () => {
    const model = { shape, weights: weightsFromConfig(shape) };
    const one = estimateMemory(model, { contextLength: 32768, tensorParallelSize: 8 });
    expect(one.kvCacheBytesPerToken).toBe(61 * (512 + 64) * 2);
    // cdiv(32768, 16) blocks × 16 tokens × 61 layers × 1152 bytes on each of the 8 GPUs
    expect(one.perGpu.kvCache).toBe(32768 * 61 * 1152);
  });
});
