import { GGMLQuantizationType, gguf, type GGUFParseOutput } from '@huggingface/gguf';
import { ModelEstimateError } from './errors';
import type { LayerAttention, ModelShape } from './model-shape';
import type { RangeReader } from './range-reader';

/**
 * Block size (elements) and bytes per block of each GGML tensor type, as llama.cpp's
 * `gguf-py/gguf/constants.py` `GGML_QUANT_SIZES` (QK_K = 256 for the K-quants).
 */
const QK_K = 256;
export const GGML_BLOCK_SIZES: Readonly<Partial<Record<GGMLQuantizationType, readonly [number, number]>>> = {
  [GGMLQuantizationType.F32]: [1, 4],
  [GGMLQuantizationType.F16]: [1, 2],
  [GGMLQuantizationType.BF16]: [1, 2],
  [GGMLQuantizationType.F64]: [1, 8],
  [GGMLQuantizationType.I8]: [1, 1],
  [GGMLQuantizationType.I16]: [1, 2],
  [GGMLQuantizationType.I32]: [1, 4],
  [GGMLQuantizationType.I64]: [1, 8],
  [GGMLQuantizationType.Q4_0]: [32, 2 + 16],
  [GGMLQuantizationType.Q4_1]: [32, 2 + 2 + 16],
  [GGMLQuantizationType.Q5_0]: [32, 2 + 4 + 16],
  [GGMLQuantizationType.Q5_1]: [32, 2 + 2 + 4 + 16],
  [GGMLQuantizationType.Q8_0]: [32, 2 + 32],
  [GGMLQuantizationType.Q8_1]: [32, 4 + 4 + 32],
  [GGMLQuantizationType.Q2_K]: [QK_K, 2 + 2 + QK_K / 16 + QK_K / 4],
  [GGMLQuantizationType.Q3_K]: [QK_K, 2 + QK_K / 4 + QK_K / 8 + 12],
  [GGMLQuantizationType.Q4_K]: [QK_K, 2 + 2 + QK_K / 2 + 12],
  [GGMLQuantizationType.Q5_K]: [QK_K, 2 + 2 + QK_K / 2 + QK_K / 8 + 12],
  [GGMLQuantizationType.Q6_K]: [QK_K, 2 + QK_K / 2 + QK_K / 4 + QK_K / 16],
  [GGMLQuantizationType.Q8_K]: [QK_K, 4 + QK_K + QK_K / 8],
  [GGMLQuantizationType.IQ2_XXS]: [QK_K, 2 + QK_K / 4],
  [GGMLQuantizationType.IQ2_XS]: [QK_K, 2 + QK_K / 4 + QK_K / 32],
  [GGMLQuantizationType.IQ3_XXS]: [QK_K, 2 + QK_K / 4 + QK_K / 8],
  [GGMLQuantizationType.IQ1_S]: [QK_K, 2 + QK_K / 8 + QK_K / 16],
  [GGMLQuantizationType.IQ4_NL]: [32, 2 + 16],
  [GGMLQuantizationType.IQ3_S]: [QK_K, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4],
  [GGMLQuantizationType.IQ2_S]: [QK_K, 2 + QK_K / 4 + QK_K / 16],
  [GGMLQuantizationType.IQ4_XS]: [QK_K, 2 + 2 + QK_K / 2 + QK_K / 64],
  [GGMLQuantizationType.IQ1_M]: [QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32],
  [GGMLQuantizationType.TQ1_0]: [QK_K, 2 + 4 * 13],
  [GGMLQuantizationType.TQ2_0]: [QK_K, 2 + 64],
  [GGMLQuantizationType.MXFP4]: [32, 1 + 16],
};

export interface GgufModel {
  shape: ModelShape;
  /** Bytes of all tensors, from their shapes and GGML types. */
  weightsBytes: number;
  /** Tensor bytes by GGML type name (`Q8_0`, `F32`, …). */
  bytesByType: Record<string, number>;
  tensorCount: number;
}

/**
 * Reads a GGUF file's metadata and tensor infos with `@huggingface/gguf`, through the RangeReader:
 * the library asks for 2 MB ranges until it has the whole header, the tensor data is never read.
 */
export async function readGgufModel(reader: RangeReader, path: string): Promise<GgufModel> {
  const parsed = await readGgufHeader(reader, path);
  const { weightsBytes, bytesByType } = ggufTensorBytes(parsed, path);
  return { shape: ggufShapeOf(parsed.metadata, path), weightsBytes, bytesByType, tensorCount: parsed.tensorInfos.length };
}

/** The parsed header (metadata and tensor infos) of one GGUF file or shard. */
export async function readGgufHeader(reader: RangeReader, path: string): Promise<GGUFParseOutput<{ strict: false }>> {
  try {
    return (await gguf(`https://artifact.invalid/${encodeURIComponent(path)}`, { fetch: rangeFetch(reader, path) })) as GGUFParseOutput<{ strict: false }>;
  } catch (err) {
    if (err instanceof ModelEstimateError) throw err;
    throw new ModelEstimateError('INVALID_GGUF', `${path}: ${(err as Error).message}`);
  }
}

/** Bytes of the tensors of a parsed GGUF header, by type. */
export function ggufTensorBytes(parsed: Pick<GGUFParseOutput, 'tensorInfos'>, path: string): { weightsBytes: number; bytesByType: Record<string, number> } {
  const bytesByType: Record<string, number> = {};
  let weightsBytes = 0;
  for (const tensor of parsed.tensorInfos) {
    const size = GGML_BLOCK_SIZES[tensor.dtype];
    const typeName = GGMLQuantizationType[tensor.dtype] ?? String(tensor.dtype);
    if (!size) throw new ModelEstimateError('INVALID_GGUF', `${path}: tensor "${tensor.name}" has GGML type ${typeName}, whose size is unknown`);
    const elements = tensor.shape.reduce((product, dim) => product * Number(dim), 1);
    const [blockSize, typeSize] = size;
    if (elements % blockSize !== 0) {
      throw new ModelEstimateError('INVALID_GGUF', `${path}: tensor "${tensor.name}" has ${elements} elements, not a multiple of the ${typeName} block of ${blockSize}`);
    }
    const bytes = (elements / blockSize) * typeSize;
    bytesByType[typeName] = (bytesByType[typeName] ?? 0) + bytes;
    weightsBytes += bytes;
  }
  return { weightsBytes, bytesByType };
}

/** The decoder's shape from GGUF architecture keys (`<arch>.block_count`, `<arch>.attention.head_count_kv`, …). */
export function ggufShapeOf(metadata: Record<string, unknown>, path: string): ModelShape {
  const arch = metadata['general.architecture'];
  if (typeof arch !== 'string') throw new ModelEstimateError('INVALID_GGUF', `${path}: general.architecture is missing; expected the model architecture name`);
  const key = (name: string) => `${arch}.${name}`;
  const count = (name: string, fallback?: number): number => {
    const raw = metadata[key(name)];
    // head_count_kv may be a per-layer array (hybrid models); the cache is sized by its maximum.
    const value = Array.isArray(raw) ? Math.max(...raw.map(Number)) : raw === undefined ? fallback : Number(raw);
    if (value === undefined || !Number.isSafeInteger(value) || value <= 0) {
      throw new ModelEstimateError('INVALID_GGUF', `${path}: ${key(name)} is ${raw === undefined ? 'missing' : JSON.stringify(String(raw))}; expected a positive integer`);
    }
    return value;
  };
  const layers = count('block_count');
  const hiddenSize = count('embedding_length');
  const attentionHeads = count('attention.head_count');
  const kvHeads = count('attention.head_count_kv', attentionHeads);
  const headDim = count('attention.key_length', hiddenSize / attentionHeads);
  const tokens = metadata['tokenizer.ggml.tokens'];
  const vocabSize = count('vocab_size', Array.isArray(tokens) ? tokens.length : undefined);
  const window = metadata[key('attention.sliding_window')];
  const slidingWindow = window === undefined ? undefined : Number(window);
  const layerAttention = ggufLayerAttention(arch, layers, slidingWindow, metadata[key('attention.sliding_window_pattern')]);
  const kvLoraRank = metadata[key('attention.kv_lora_rank')];
  const ropeDim = metadata[key('rope.dimension_count')];
  return {
    architecture: arch,
    layers,
    hiddenSize,
    intermediateSize: count('feed_forward_length', 4 * hiddenSize),
    vocabSize,
    attentionHeads,
    kvHeads,
    headDim,
    valueHeadDim: count('attention.value_length', headDim),
    tieWordEmbeddings: false,
    attentionBias: false,
    qkNorm: false,
    normsPerLayer: 2,
    layerAttention,
    slidingWindow,
    mla:
      kvLoraRank === undefined
        ? undefined
        : { kvLoraRank: Number(kvLoraRank), qkRopeHeadDim: Number(ropeDim ?? 64), qkNopeHeadDim: headDim - Number(ropeDim ?? 64), vHeadDim: count('attention.value_length', headDim) },
    maxContextLength: count('context_length', 2048),
  };
}

/**
 * Which layers slide. Newer GGUFs store `attention.sliding_window_pattern` (a per-layer array of
 * booleans, or every N-th layer global); older ones leave the pattern to llama.cpp's code:
 * Gemma-2 alternates starting with a sliding layer, Gemma-3 has one global layer in six.
 */
function ggufLayerAttention(arch: string, layers: number, window: number | undefined, pattern: unknown): LayerAttention[] {
  const each = (slides: (i: number) => boolean) => Array.from({ length: layers }, (_, i): LayerAttention => (window && slides(i) ? 'sliding' : 'full'));
  if (Array.isArray(pattern) && pattern.length === layers) return each((i) => pattern[i] === true);
  const every = typeof pattern === 'number' || typeof pattern === 'bigint' ? Number(pattern) : arch === 'gemma2' ? 2 : arch === 'gemma3' ? 6 : 0;
  if (every > 0) return each((i) => (i + 1) % every !== 0);
  return each(() => true);
}

/** A `fetch` for `@huggingface/gguf` that answers its `Range: bytes=a-b` requests from a RangeReader. */
function rangeFetch(reader: RangeReader, path: string): typeof fetch {
  return (async (_input: unknown, init?: { headers?: Record<string, string> }) => {
    const range = /^bytes=(\d+)-(\d+)$/.exec(init?.headers?.['Range'] ?? '');
    if (!range) throw new ModelEstimateError('INVALID_GGUF', `${path}: the GGUF reader asked for no byte range`);
    const start = Number(range[1]);
    const bytes = await reader.readRange(path, start, Number(range[2]));
    if (bytes.length === 0 && start === 0) throw new ModelEstimateError('INVALID_GGUF', `${path}: the file is empty`);
    return new Response(bytes, { status: 206, headers: { 'content-range': `bytes ${start}-${start + Math.max(0, bytes.length - 1)}/*` } });
  }) as typeof fetch;
}
