import { CREDENTIAL_ID_LENGTH, CredentialFormat, CredentialFormatError, type CredentialParts, type GeneratedCredential } from '@gpufleet/access-core';

/**
 * API keys of the OpenAI-compatible endpoint look like `gpufleet_<id>_<secret>`: a credential
 * of @gpufleet/access-core (12-character public id, 43-character secret stored only hashed).
 */
export const API_KEY_PREFIX = 'gpufleet_';
export const API_KEY_ID_LENGTH = CREDENTIAL_ID_LENGTH;
const API_KEYS = new CredentialFormat(API_KEY_PREFIX, 'API key', 'keys');

export type ApiKeyParts = CredentialParts;
export type GeneratedApiKey = GeneratedCredential;
/** A presented key that cannot be a gpufleet key; its message never repeats the key. */
export { CredentialFormatError as ApiKeyFormatError, hashSecret } from '@gpufleet/access-core';
export type ApiKeyProblem = CredentialFormatError['problem'];

export function generateApiKey(): GeneratedApiKey {
  return API_KEYS.generate();
}

export function formatApiKey(id: string, secret: string): string {
  return API_KEYS.format(id, secret);
}

export function parseApiKey(key: string): ApiKeyParts {
  return API_KEYS.parse(key);
}

/** Whether `key` is well formed and its secret matches `storedHash` (constant time); a malformed stored hash throws. */
export function verifyKey(key: string, storedHash: string): boolean {
  return API_KEYS.verify(key, storedHash);
}
