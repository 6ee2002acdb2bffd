import { parseGgufShardFilename } from '@huggingface/gguf';
import { torchDtypeBytes } from './dtypes';
import { ModelEstimateError } from './errors';
import type { ModelDescription } from './estimate';
import { ggufTensorBytes, readGgufHeader, readGgufModel } from './gguf';
import { MAX_MODEL_CONFIG_BYTES, parseModelConfig } from './model-config';
import type { ModelShape } from './model-shape';
import { parameterCountOf } from './parameters';
import type { RangeReader } from './range-reader';
import { MAX_SAFETENSORS_INDEX_BYTES, bytesByDtype, parseSafetensorsIndex, readSafetensorsHeader, type SafetensorsTensor } from './safetensors';

const INDEX_FILE = 'model.safetensors.index.json';

export interface DescribeArtifactOptions {
  /**
   * Read every shard's header (two range reads per shard). False trusts the index's
   * `metadata.total_size` alone, for a cheaper estimate when the index has one.
   */
  readShardHeaders?: boolean;
}

/**
 * Describes a model artifact from its file list and the few bytes an estimate needs. Weights come
 * from the safetensors headers (sum of tensor sizes by dtype), else the index's `total_size`,
 * else config.json's parameter count × dtype; GGUF artifacts from their tensor infos.
 */
export async function describeArtifact(reader: RangeReader, files: readonly string[], options: DescribeArtifactOptions = {}): Promise<ModelDescription> {
  const gguf = files.filter((file) => file.endsWith('.gguf'));
  const config = files.find((file) => file === 'config.json');
  if (gguf.length > 0 && !config) return describeGguf(reader, gguf);
  if (!config) {
    throw new ModelEstimateError('MISSING_MODEL_FILES', `the artifact has neither config.json nor a .gguf file (files: ${preview(files)}); an estimate needs one of them`);
  }
  const shape = parseModelConfig(new TextDecoder().decode(await reader.readSmallFile(config, MAX_MODEL_CONFIG_BYTES)), config);

  const index = files.includes(INDEX_FILE)
    ? parseSafetensorsIndex(new TextDecoder().decode(await reader.readSmallFile(INDEX_FILE, MAX_SAFETENSORS_INDEX_BYTES)), INDEX_FILE)
    : undefined;
  if (index && index.totalSize !== undefined && options.readShardHeaders === false) {
    return { shape, weights: { bytes: index.totalSize, source: 'safetensors-index' } };
  }
  const shards = index ? index.shards : files.filter((file) => file.endsWith('.safetensors')).sort();
  const missing = shards.filter((shard) => !files.includes(shard));
  if (missing.length > 0) {
    throw new ModelEstimateError('MISSING_MODEL_FILES', `${INDEX_FILE} names shards the artifact does not have: ${preview(missing)}`);
  }
  if (shards.length > 0) {
    const tensors: SafetensorsTensor[] = [];
    for (const shard of shards) tensors.push(...(await readSafetensorsHeader(reader, shard)).tensors);
    const byDtype = bytesByDtype(tensors);
    return { shape, weights: { bytes: Object.values(byDtype).reduce((a, b) => a + b, 0), source: 'safetensors-headers', byDtype } };
  }
  return { shape, weights: weightsFromConfig(shape) };
}

/** Parameters × bytes per parameter: the quantization's bits when quantized, else the checkpoint dtype. */
export function weightsFromConfig(shape: ModelShape): ModelDescription['weights'] {
  const parameters = parameterCountOf(shape);
  const bytesPerParameter = shape.quantization ? shape.quantization.bits / 8 : torchDtypeBytes(shape.dtype ?? 'bfloat16', 'torch_dtype');
  return { bytes: Math.ceil(parameters * bytesPerParameter), source: 'config-parameters', parameters };
}

/**
 * A GGUF artifact: one model file or its shards (`-00001-of-00003.gguf`), plus any multimodal
 * projector (`mmproj*.gguf`), whose tensors are loaded too. Several different quantizations in one
 * artifact are ambiguous: its allowPatterns should pick one.
 */
async function describeGguf(reader: RangeReader, files: string[]): Promise<ModelDescription> {
  const projectors = files.filter((file) => /(^|\/)mmproj[^/]*\.gguf$/i.test(file));
  const models = files.filter((file) => !projectors.includes(file));
  const prefixes = new Set(models.map((file) => parseGgufShardFilename(file)?.prefix ?? file));
  if (prefixes.size !== 1) {
    throw new ModelEstimateError('INVALID_GGUF', `the artifact holds ${prefixes.size} GGUF models (${preview([...prefixes])}); narrow it to one with allowPatterns`);
  }
  const ordered = [...models].sort();
  const first = await readGgufModel(reader, ordered[0]);
  let bytes = first.weightsBytes;
  const byDtype = { ...first.bytesByType };
  for (const file of [...ordered.slice(1), ...projectors]) {
    // Later shards and projectors carry no decoder keys of their own: only their tensors count.
    const more = ggufTensorBytes(await readGgufHeader(reader, file), file);
    bytes += more.weightsBytes;
    for (const [type, size] of Object.entries(more.bytesByType)) byDtype[type] = (byDtype[type] ?? 0) + size;
  }
  return { shape: first.shape, weights: { bytes, source: 'gguf', byDtype } };
}

function preview(names: readonly string[]): string {
  return names.length <= 5 ? names.join(', ') || 'none' : `${names.slice(0, 5).join(', ')} and ${names.length - 5} more`;
}
