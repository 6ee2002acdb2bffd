/**
 * Errors of the OpenAI-compatible API and the bodies that carry them.
 *
 * One `ApiError` can be rendered in the three shapes clients meet in the wild:
 * - `openai`: `{"error": {"message", "type": "invalid_request_error", "param", "code": "model_not_found" | null}}`
 * - `vllm`: the same envelope as vLLM writes it today, `type` a class name (`BadRequestError`)
 *   and `code` the HTTP status;
 * - `vllm-legacy`: older vLLM's flat `{"object": "error", "message", "type", "param", "code": 400}`.
 */

/** OpenAI's `error.type` values. */
export type OpenAIErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'server_error'
  | 'service_unavailable';

export type ErrorFormat = 'openai' | 'vllm' | 'vllm-legacy';

export const ERROR_FORMATS: readonly ErrorFormat[] = ['openai', 'vllm', 'vllm-legacy'];

/** vLLM names its error types after the HTTP status class. */
const VLLM_TYPES: Readonly<Record<number, string>> = {
  400: 'BadRequestError',
  401: 'UnauthorizedError',
  403: 'ForbiddenError',
  404: 'NotFoundError',
  405: 'MethodNotAllowedError',
  413: 'RequestEntityTooLargeError',
  429: 'TooManyRequestsError',
  500: 'InternalServerError',
  501: 'NotImplementedError',
  503: 'ServiceUnavailableError',
};

/** An error that crosses the HTTP boundary: a status, a machine-readable type/code and a sentence. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: OpenAIErrorType,
    message: string,
    /** The request field at fault, e.g. `messages[2].role`; null when none is. */
    readonly param: string | null = null,
    /** OpenAI's string code, e.g. `model_not_found`, `context_length_exceeded`. */
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | number | null };
}

export interface VllmLegacyErrorBody {
  object: 'error';
  message: string;
  type: string;
  param: string | null;
  code: number;
}

export type ErrorBody = OpenAIErrorBody | VllmLegacyErrorBody;

export function vllmErrorType(status: number): string {
  return VLLM_TYPES[status] ?? (status >= 500 ? 'InternalServerError' : 'BadRequestError');
}

/** The JSON body of `error` in the given format (default `openai`). */
export function errorBody(error: ApiError, format: ErrorFormat = 'openai'): ErrorBody {
  switch (format) {
    case 'vllm':
      return { error: { message: error.message, type: vllmErrorType(error.status), param: error.param, code: error.status } };
    case 'vllm-legacy':
      return { object: 'error', message: error.message, type: vllmErrorType(error.status), param: error.param, code: error.status };
    default:
      return { error: { message: error.message, type: error.type, param: error.param, code: error.code } };
  }
}

// ---------------------------------------------------------------- constructors

/** 400: a field is wrong; the message starts with the field path. */
export function invalidField(param: string, sentence: string): ApiError {
  return new ApiError(400, 'invalid_request_error', `${param}: ${sentence}`, param);
}

export function invalidRequest(message: string, param: string | null = null, code: string | null = null): ApiError {
  return new ApiError(400, 'invalid_request_error', message, param, code);
}

export function modelNotFound(model: string, available: readonly string[] = []): ApiError {
  const known = available.length > 0 ? ` Available models: ${available.join(', ')}.` : '';
  return new ApiError(404, 'not_found_error', `The model \`${model}\` does not exist.${known}`, 'model', 'model_not_found');
}

export function contextLengthExceeded(maxModelLen: number, promptTokens: number, completionTokens: number, param: string): ApiError {
  const requested = promptTokens + completionTokens;
  return new ApiError(
    400,
    'invalid_request_error',
    `This model's maximum context length is ${maxModelLen} tokens. However, you requested ${requested} tokens ` +
      `(${promptTokens} in the ${param === 'messages' ? 'messages' : 'prompt'}, ${completionTokens} in the completion). ` +
      `Please reduce the length of the ${param === 'messages' ? 'messages' : 'prompt'} or completion.`,
    param,
    'context_length_exceeded',
  );
}

export function unauthorized(message = 'Invalid or missing API key: send "Authorization: Bearer <key>".'): ApiError {
  return new ApiError(401, 'authentication_error', message, null, 'invalid_api_key');
}

export function routeNotFound(method: string, path: string): ApiError {
  return new ApiError(404, 'not_found_error', `No route for ${method} ${path}.`, null, 'not_found');
}

export function methodNotAllowed(method: string, path: string, allowed: readonly string[]): ApiError {
  return new ApiError(405, 'invalid_request_error', `${method} is not allowed on ${path}; use ${allowed.join(' or ')}.`, null, 'method_not_allowed');
}

export function payloadTooLarge(limitBytes: number): ApiError {
  return new ApiError(413, 'invalid_request_error', `Request body exceeds ${limitBytes} bytes.`, null, 'request_too_large');
}

export function rateLimited(message: string): ApiError {
  return new ApiError(429, 'rate_limit_error', message, null, 'rate_limit_exceeded');
}

export function serverError(message: string): ApiError {
  return new ApiError(500, 'server_error', message, null, 'internal_error');
}

export function serviceUnavailable(message: string): ApiError {
  return new ApiError(503, 'service_unavailable', message, null, 'service_unavailable');
}
