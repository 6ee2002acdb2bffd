/**
 * API key records: the stored proto form (ApiKeyRecord in the api-keys bucket) and the view
 * routing-core's `authorize` checks, plus validation of CreateKey requests.
 */
import { ApiKey, ApiKeyRecord, CreateKeyRequest } from '@gpufleet/contracts';
import { invalidArgument } from '@gpufleet/grpc-kit';
import { formatApiKey, generateApiKey, hashSecret, type ApiKeyRecord as KeyView } from '@gpufleet/routing-core';

/** The view `authorize` checks, from a stored record. */
export function keyView(record: ApiKeyRecord): KeyView {
  const key = record.key ?? ApiKey.fromPartial({});
  const rpm = key.limits?.requestsPerMinute ?? 0;
  const tpm = key.limits?.tokensPerMinute ?? 0;
  return {
    id: key.id,
    hash: record.secretHash,
    models: key.allModels ? '*' : [...key.models],
    expiresAt: key.expiresAt ? key.expiresAt.getTime() : undefined,
    revoked: key.revoked,
    limits: rpm > 0 || tpm > 0 ? { requestsPerMinute: rpm > 0 ? rpm : undefined, tokensPerMinute: tpm > 0 ? tpm : undefined } : undefined,
  };
}

const MAX_NAME = 128;
const MAX_MODELS = 256;
const MAX_MODEL_NAME = 256;
const LABEL_KEY = /^[A-Za-z0-9]([A-Za-z0-9._/-]{0,61}[A-Za-z0-9])?$/;
/** Labels of one key, and characters of one value: a record stays far below NATS's max_payload (a 2 MB label gave INTERNAL). */
const MAX_LABELS = 64;
const MAX_LABEL_VALUE = 256;

/** A new key from a CreateKey request: the record to store and the full key to show once. */
/** The longest expires_in_seconds accepted: ten years. */
export const MAX_EXPIRES_IN_S = 10 * 365 * 24 * 3600;

export function newKeyRecord(request: CreateKeyRequest, now: Date): { record: ApiKeyRecord; fullKey: string } {
  if (request.name.length > MAX_NAME) throw invalidArgument('name', `at most ${MAX_NAME} characters`, `${request.name.length} characters`);
  if (request.allModels && request.models.length > 0) throw invalidArgument('models', 'no models when all_models is true', request.models);
  if (!request.allModels && request.models.length === 0) {
    throw invalidArgument('models', 'at least one served model name, or all_models: true for every model', []);
  }
  if (request.models.length > MAX_MODELS) throw invalidArgument('models', `at most ${MAX_MODELS} names`, `${request.models.length} names`);
  request.models.forEach((model, i) => {
    if (model.length === 0 || model.length > MAX_MODEL_NAME || model.trim() !== model) {
      throw invalidArgument(`models[${i}]`, `a served model name of 1-${MAX_MODEL_NAME} characters without surrounding spaces`, model);
    }
  });
  if (request.expiresAt && request.expiresInSeconds > 0) {
    throw invalidArgument('expires_in_seconds', 'not set together with expires_at (give one of them)', request.expiresInSeconds);
  }
  // Bounded so the expiry is a real date (a huge number made an Invalid Date and an INTERNAL error).
  if (!Number.isSafeInteger(request.expiresInSeconds) || request.expiresInSeconds < 0 || request.expiresInSeconds > MAX_EXPIRES_IN_S) {
    throw invalidArgument('expires_in_seconds', `a whole number of seconds 0-${MAX_EXPIRES_IN_S} (10 years; 0: never expires)`, request.expiresInSeconds);
  }
  let expiresAt: Date | undefined = request.expiresAt;
  if (request.expiresInSeconds > 0) expiresAt = new Date(now.getTime() + request.expiresInSeconds * 1000);
  if (expiresAt && expiresAt.getTime() <= now.getTime()) {
    throw invalidArgument('expires_at', `a time in the future (now is ${now.toISOString()})`, expiresAt.toISOString());
  }
  const labels = Object.entries(request.labels);
  if (labels.length > MAX_LABELS) throw invalidArgument('labels', `at most ${MAX_LABELS} labels`, `${labels.length} labels`);
  for (const [key, value] of labels) {
    if (!LABEL_KEY.test(key)) throw invalidArgument(`labels.${key}`, 'a label key of letters, digits, ".", "_", "/" and "-" (at most 63 characters)', key);
    if (value.length > MAX_LABEL_VALUE) throw invalidArgument(`labels.${key}`, `a value of at most ${MAX_LABEL_VALUE} characters`, `${value.length} characters`);
  }
  const generated = generateApiKey();
  const key: ApiKey = {
    id: generated.id,
    name: request.name,
    allModels: request.allModels,
    models: [...new Set(request.models)],
    expiresAt,
    limits: request.limits && (request.limits.requestsPerMinute > 0 || request.limits.tokensPerMinute > 0) ? request.limits : undefined,
    revoked: false,
    createdAt: now,
    revokedAt: undefined,
    labels: { ...request.labels },
  };
  return { record: { key, secretHash: hashSecret(generated.secret) }, fullKey: formatApiKey(generated.id, generated.secret) };
}

/** What the KeyService shows of a record: never the hash. */
export function publicKey(record: ApiKeyRecord): ApiKey {
  return record.key ?? ApiKey.fromPartial({});
}
