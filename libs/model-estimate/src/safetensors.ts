import { SAFETENSORS_DTYPE_BYTES } from './dtypes';
import { ModelEstimateError } from './errors';
import type { RangeReader } from './range-reader';

/**
 * The most header JSON a safetensors file may declare. The format's reference implementation
 * refuses headers above 100 MB (`MAX_HEADER_SIZE`); a real one is well under 10 MiB even for a
 * shard of a 671B-parameter MoE model.
 */
export const MAX_SAFETENSORS_HEADER_BYTES = 100 * 1024 * 1024;
/** The most a `model.safetensors.index.json` may be (real ones are well under 10 MiB). */
export const MAX_SAFETENSORS_INDEX_BYTES = 64 * 1024 * 1024;

export interface SafetensorsTensor {
  name: string;
  dtype: string;
  shape: number[];
  /** Bytes of the tensor's data (data_offsets end − begin). */
  bytes: number;
}

export interface SafetensorsHeader {
  tensors: SafetensorsTensor[];
  /** The free-form `__metadata__` map (string to string), empty when absent. */
  metadata: Record<string, string>;
  /** Size of the JSON header in bytes, as declared by the 8-byte prefix. */
  headerBytes: number;
  /** Sum of the tensors' bytes: the data section the header describes. */
  dataBytes: number;
}

export interface SafetensorsIndex {
  /** `metadata.total_size`: bytes of all tensors over all shards, when the index gives it. */
  totalSize?: number;
  /** Tensor name → shard file name, relative to the index's directory. */
  weightMap: Record<string, string>;
  /** The distinct shard files, sorted. */
  shards: string[];
}

/**
 * Reads a safetensors header with two range reads: the 8-byte little-endian header length,
 * then exactly that many bytes of JSON. The tensor data itself is never read.
 */
export async function readSafetensorsHeader(reader: RangeReader, path: string): Promise<SafetensorsHeader> {
  const prefix = await reader.readRange(path, 0, 7);
  const headerBytes = headerLengthOf(prefix, path);
  const json = await reader.readRange(path, 8, 8 + headerBytes - 1);
  if (json.length !== headerBytes) {
    throw invalid(path, `the header length says ${headerBytes} bytes of JSON but the file ends after ${json.length}`);
  }
  return parseSafetensorsHeaderJson(json, path);
}

/** Decodes the 8-byte prefix and checks it against the bound. */
export function headerLengthOf(prefix: Uint8Array, path: string): number {
  if (prefix.length < 8) {
    throw invalid(path, `the file is ${prefix.length} bytes; a safetensors file starts with an 8-byte little-endian header length`);
  }
  const length = new DataView(prefix.buffer, prefix.byteOffset, 8).getBigUint64(0, true);
  if (length === 0n) throw invalid(path, 'the header length is 0; expected the size of a JSON object');
  if (length > BigInt(MAX_SAFETENSORS_HEADER_BYTES)) {
    throw invalid(path, `the header length is ${length} bytes, above the ${MAX_SAFETENSORS_HEADER_BYTES}-byte bound; this is not a safetensors file or it is corrupt`);
  }
  return Number(length);
}

/** Parses and validates the JSON header: every tensor's dtype, shape and data_offsets. */
export function parseSafetensorsHeaderJson(json: Uint8Array, path: string): SafetensorsHeader {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(json));
  } catch (err) {
    throw invalid(path, `the header is not UTF-8 JSON (${(err as Error).message})`);
  }
  if (!isRecord(parsed)) throw invalid(path, 'the header is not a JSON object');

  const tensors: Array<SafetensorsTensor & { begin: number }> = [];
  let metadata: Record<string, string> = {};
  for (const [name, entry] of Object.entries(parsed)) {
    if (name === '__metadata__') {
      metadata = metadataOf(entry, path);
      continue;
    }
    tensors.push(tensorOf(name, entry, path));
  }

  // The format forbids holes and overlaps: sorted by offset, each tensor starts where the last ended.
  const byOffset = [...tensors].sort((a, b) => a.begin - b.begin);
  let expected = 0;
  for (const tensor of byOffset) {
    if (tensor.begin !== expected) {
      throw invalid(path, `tensor "${tensor.name}" starts at byte ${tensor.begin} of the data, expected ${expected} (the data must be contiguous, without holes or overlaps)`);
    }
    expected = tensor.begin + tensor.bytes;
  }
  return {
    tensors: tensors.map(({ name, dtype, shape, bytes }) => ({ name, dtype, shape, bytes })),
    metadata,
    headerBytes: json.length,
    dataBytes: expected,
  };
}

function tensorOf(name: string, entry: unknown, path: string): SafetensorsTensor & { begin: number } {
  const at = `tensor "${name}"`;
  if (!isRecord(entry)) throw invalid(path, `${at} is not an object with dtype, shape and data_offsets`);
  const { dtype, shape, data_offsets: offsets } = entry;
  if (typeof dtype !== 'string' || SAFETENSORS_DTYPE_BYTES[dtype] === undefined) {
    throw invalid(path, `${at}.dtype is ${JSON.stringify(dtype)}; expected one of ${Object.keys(SAFETENSORS_DTYPE_BYTES).join(', ')}`);
  }
  if (!Array.isArray(shape) || !shape.every(isCount)) {
    throw invalid(path, `${at}.shape is ${JSON.stringify(shape)}; expected an array of non-negative integers`);
  }
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isCount) || offsets[1] < offsets[0]) {
    throw invalid(path, `${at}.data_offsets is ${JSON.stringify(offsets)}; expected [begin, end] with 0 <= begin <= end`);
  }
  const elements = (shape as number[]).reduce((product, dim) => product * dim, 1);
  const bytes = offsets[1] - offsets[0];
  const expected = Math.ceil(elements * SAFETENSORS_DTYPE_BYTES[dtype]);
  if (bytes !== expected) {
    throw invalid(path, `${at} spans ${bytes} bytes but ${dtype}[${shape.join(', ')}] needs ${expected}`);
  }
  return { name, dtype, shape: shape as number[], bytes, begin: offsets[0] };
}

function metadataOf(entry: unknown, path: string): Record<string, string> {
  if (!isRecord(entry) || !Object.values(entry).every((value) => typeof value === 'string')) {
    throw invalid(path, '__metadata__ is not an object of string values');
  }
  return entry as Record<string, string>;
}

/** Parses `model.safetensors.index.json`: `weight_map` and, when present, `metadata.total_size`. */
export function parseSafetensorsIndex(text: string, path: string): SafetensorsIndex {
  const fail = (detail: string) => new ModelEstimateError('INVALID_SAFETENSORS_INDEX', `${path}: ${detail}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw fail(`not JSON (${(err as Error).message})`);
  }
  if (!isRecord(parsed)) throw fail('not a JSON object');
  const { weight_map: weightMap, metadata } = parsed;
  if (!isRecord(weightMap) || Object.keys(weightMap).length === 0) {
    throw fail('weight_map is missing or empty; expected an object of tensor name → shard file');
  }
  for (const [tensor, file] of Object.entries(weightMap)) {
    if (typeof file !== 'string' || !file.endsWith('.safetensors')) {
      throw fail(`weight_map["${tensor}"] is ${JSON.stringify(file)}; expected a .safetensors file name`);
    }
  }
  let totalSize: number | undefined;
  if (metadata !== undefined && metadata !== null) {
    if (!isRecord(metadata)) throw fail('metadata is not an object');
    const raw = metadata['total_size'];
    if (raw !== undefined) {
      // Some exporters write it as a string of digits.
      const value = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw;
      if (!isCount(value)) throw fail(`metadata.total_size is ${JSON.stringify(raw)}; expected a non-negative integer of bytes`);
      totalSize = value;
    }
  }
  const map = weightMap as Record<string, string>;
  return { totalSize, weightMap: map, shards: [...new Set(Object.values(map))].sort() };
}

/** Sum of tensor bytes by dtype, e.g. `{ BF16: 16060522496 }`. */
export function bytesByDtype(tensors: readonly SafetensorsTensor[]): Record<string, number> {
  const sums: Record<string, number> = {};
  for (const tensor of tensors) sums[tensor.dtype] = (sums[tensor.dtype] ?? 0) + tensor.bytes;
  return sums;
}

function invalid(path: string, detail: string): ModelEstimateError {
  return new ModelEstimateError('INVALID_SAFETENSORS', `${path}: ${detail}`);
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
