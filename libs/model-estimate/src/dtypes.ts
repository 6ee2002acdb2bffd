import { ModelEstimateError } from './errors';

/**
 * Bytes per element of each safetensors dtype (the `Dtype` enum of the safetensors format).
 * Sub-byte types are listed per element as a fraction: F4 packs two values per byte.
 */
export const SAFETENSORS_DTYPE_BYTES: Readonly<Record<string, number>> = {
  BOOL: 1,
  U8: 1,
  I8: 1,
  F8_E5M2: 1,
  F8_E4M3: 1,
  F8_E8M0: 1,
  F4: 0.5,
  F6_E2M3: 0.75,
  F6_E3M2: 0.75,
  I16: 2,
  U16: 2,
  F16: 2,
  BF16: 2,
  I32: 4,
  U32: 4,
  F32: 4,
  I64: 8,
  U64: 8,
  F64: 8,
  C64: 8,
};

/** Bytes per value of a transformers `torch_dtype` / vLLM `--dtype` / `--kv-cache-dtype` name. */
const TORCH_DTYPE_BYTES: Readonly<Record<string, number>> = {
  float32: 4,
  float: 4,
  float16: 2,
  half: 2,
  bfloat16: 2,
  fp8: 1,
  fp8_e4m3: 1,
  fp8_e5m2: 1,
  float8_e4m3fn: 1,
  float8_e5m2: 1,
  int8: 1,
  // llama.cpp's --cache-type-k/-v names: q8_0 and q4_0 blocks of 32 values with an fp16 scale.
  f32: 4,
  f16: 2,
  q8_0: 34 / 32,
  q4_0: 18 / 32,
};

export function torchDtypeBytes(dtype: string, field: string): number {
  const bytes = TORCH_DTYPE_BYTES[dtype.replace(/^torch\./, '').toLowerCase()];
  if (bytes === undefined) {
    throw new ModelEstimateError(
      'INVALID_ESTIMATE_OPTIONS',
      `${field} is "${dtype}"; expected one of ${Object.keys(TORCH_DTYPE_BYTES).join(', ')}`,
    );
  }
  return bytes;
}

export function isTorchDtype(dtype: string): boolean {
  return TORCH_DTYPE_BYTES[dtype.replace(/^torch\./, '').toLowerCase()] !== undefined;
}
