import { createHmac, randomBytes, timingSafeEqual } from 'crypto';

/**
 * API keys look like `gpufleet_<id>_<secret>`:
 * - id: 12 lower-case base32 characters (60 random bits), public, the key's name in storage,
 *   logs and metrics;
 * - secret: 43 base64url characters (32 random bytes), shown to the user once, stored only
 *   hashed.
 * The secret's alphabet includes `_`, so a key is split by position (the id has a fixed
 * length), never by `_`.
 */
export const API_KEY_PREFIX = 'gpufleet_';
export const API_KEY_ID_LENGTH = 12;
const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
/** Parsing also takes digits 0,1,8,9 so ids minted by other tools as plain lower-case alnum pass. */
const ID_PATTERN = /^[a-z0-9]{12}$/;
const SECRET_BYTES = 32;
/** 32 characters is 192 bits in base64url; 256 bounds the work an attacker can make us hash. */
const SECRET_PATTERN = /^[A-Za-z0-9_-]{32,256}$/;
const HASH_SCHEME = 'hmac-sha256';
const SALT_BYTES = 16;
const DIGEST_BYTES = 32;

export interface ApiKeyParts {
  readonly id: string;
  readonly secret: string;
}

export interface GeneratedApiKey extends ApiKeyParts {
  /** What the user puts in `Authorization: Bearer …`; shown once. */
  readonly key: string;
}

export type ApiKeyProblem = 'missing' | 'wrong_prefix' | 'malformed_id' | 'malformed_secret';

/**
 * A presented key that cannot be a gpufleet key. Messages never repeat the key: it is a
 * credential (perhaps someone else's, pasted into the wrong place) and errors end up in logs.
 */
export class ApiKeyFormatError extends Error {
  override readonly name = 'ApiKeyFormatError';

  constructor(
    readonly problem: ApiKeyProblem,
    sentence: string,
  ) {
    super(`UNAUTHENTICATED: ${sentence} (keys look like ${API_KEY_PREFIX}<12-character id>_<secret>)`);
  }
}

export function generateApiKey(): GeneratedApiKey {
  // 256 is a multiple of 32, so `byte & 31` picks every base32 character equally often.
  const bytes = randomBytes(API_KEY_ID_LENGTH);
  let id = '';
  for (const byte of bytes) id += ID_ALPHABET[byte & 31];
  const secret = randomBytes(SECRET_BYTES).toString('base64url');
  return { id, secret, key: formatApiKey(id, secret) };
}

export function formatApiKey(id: string, secret: string): string {
  return `${API_KEY_PREFIX}${id}_${secret}`;
}

export function parseApiKey(key: string): ApiKeyParts {
  if (key === '') throw new ApiKeyFormatError('missing', 'no API key given');
  if (!key.startsWith(API_KEY_PREFIX)) throw new ApiKeyFormatError('wrong_prefix', `API key does not start with ${API_KEY_PREFIX}`);
  const idEnd = API_KEY_PREFIX.length + API_KEY_ID_LENGTH;
  const id = key.slice(API_KEY_PREFIX.length, idEnd);
  if (!ID_PATTERN.test(id) || key.charAt(idEnd) !== '_') {
    throw new ApiKeyFormatError('malformed_id', `API key id is not ${API_KEY_ID_LENGTH} lower-case letters and digits followed by _`);
  }
  const secret = key.slice(idEnd + 1);
  if (!SECRET_PATTERN.test(secret)) {
    throw new ApiKeyFormatError(
      'malformed_secret',
      `API key ${id} has a malformed secret: expected 32-256 characters of A-Z a-z 0-9 _ -, got ${secret.length} characters` +
        (/^[A-Za-z0-9_-]*$/.test(secret) ? '' : ' including others'),
    );
  }
  return { id, secret };
}

/**
 * The stored form of a secret: `hmac-sha256$<salt>$<digest>`, base64url, salt random per key.
 *
 * Why a fast keyed hash and not scrypt/argon2: those slow a guesser down, which matters for
 * low-entropy passwords. Our secrets are 256 random bits, which no guesser can search at any
 * speed, while the router verifies a key on every request and a memory-hard KDF would cost ms
 * of CPU each time. The salt keys the HMAC so equal secrets never hash alike and precomputed
 * tables are useless; the scheme name leaves room to change later.
 */
export function hashSecret(secret: string): string {
  const salt = randomBytes(SALT_BYTES);
  return `${HASH_SCHEME}$${salt.toString('base64url')}$${digest(salt, secret).toString('base64url')}`;
}

/**
 * Whether `key` is well formed and its secret matches `storedHash`, compared in constant time.
 * A malformed key is simply false; a malformed stored hash throws, as it is our data that is
 * broken, not the caller's.
 */
export function verifyKey(key: string, storedHash: string): boolean {
  const { salt, expected } = parseStoredHash(storedHash);
  let secret: string;
  try {
    secret = parseApiKey(key).secret;
  } catch (err) {
    if (err instanceof ApiKeyFormatError) return false;
    throw err;
  }
  return timingSafeEqual(digest(salt, secret), expected);
}

function digest(salt: Buffer, secret: string): Buffer {
  return createHmac('sha256', salt).update(secret, 'utf8').digest();
}

function parseStoredHash(stored: string): { salt: Buffer; expected: Buffer } {
  const [scheme, salt, expected, ...rest] = stored.split('$');
  const saltBytes = Buffer.from(salt ?? '', 'base64url');
  const expectedBytes = Buffer.from(expected ?? '', 'base64url');
  if (scheme !== HASH_SCHEME || rest.length > 0 || saltBytes.length !== SALT_BYTES || expectedBytes.length !== DIGEST_BYTES) {
    throw new Error(`stored API key hash is not ${HASH_SCHEME}$<16-byte salt>$<32-byte digest> in base64url (scheme ${JSON.stringify(scheme ?? '')})`);
  }
  return { salt: saltBytes, expected: expectedBytes };
}
