/**
 * Why an estimate could not be made, machine-readable, with a sentence that says what to fix.
 * `INVALID_SAFETENSORS`, `INVALID_SAFETENSORS_INDEX`, `INVALID_MODEL_CONFIG` and `INVALID_GGUF`
 * name the file and the field; `MISSING_MODEL_FILES` says which files an artifact lacks;
 * `INVALID_ESTIMATE_OPTIONS` names the option.
 */
export type ModelEstimateReason =
  | 'INVALID_SAFETENSORS'
  | 'INVALID_SAFETENSORS_INDEX'
  | 'INVALID_MODEL_CONFIG'
  | 'INVALID_GGUF'
  | 'MISSING_MODEL_FILES'
  | 'INVALID_ESTIMATE_OPTIONS';

export class ModelEstimateError extends Error {
  constructor(
    readonly reason: ModelEstimateReason,
    detail: string,
  ) {
    super(`${reason}: ${detail}`);
    this.name = 'ModelEstimateError';
  }
}
