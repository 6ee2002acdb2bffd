import { createHmac, randomBytes, timingSafeEqual } from 'crypto';

/**
 * Bearer credentials look like `<prefix><id>_<secret>` (router API keys `gpufleet_…`, access
 * tokens `gfat_…`):
 * - id: 12 lower-case base32 characters (60 random bits), public, the credential's name in
 *   storage, logs and metrics;
 * - secret: 43 base64url characters (32 random bytes), shown to the user once, stored only
 *   hashed.
 * The secret's alphabet includes `_`, so a credential is split by position (the id has a fixed
 * length), never by `_`.
 */
export const CREDENTIAL_ID_LENGTH = 12;
const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
/** Parsing also takes digits 0,1,8,9 so ids minted by other tools as plain lower-case alnum pass. */
export const CREDENTIAL_ID_PATTERN = /^[a-z0-9]{12}$/;
const SECRET_BYTES = 32;
/** 32 characters is 192 bits in base64url; 256 bounds the work an attacker can make us hash. */
const SECRET_PATTERN = /^[A-Za-z0-9_-]{32,256}$/;
const HASH_SCHEME = 'hmac-sha256';
const SALT_BYTES = 16;
const DIGEST_BYTES = 32;

export interface CredentialParts {
  readonly id: string;
  readonly secret: string;
}

export interface GeneratedCredential extends CredentialParts {
  /** What the user puts in `Authorization: Bearer …`; shown once. */
  readonly key: string;
}

export type CredentialProblem = 'missing' | 'wrong_prefix' | 'malformed_id' | 'malformed_secret';

/**
 * A presented credential that cannot be one of ours. Messages never repeat it: it is a secret
 * (perhaps someone else's, pasted into the wrong place) and errors end up in logs.
 */
export class CredentialFormatError extends Error {
  override readonly name = 'CredentialFormatError';

  constructor(
    readonly problem: CredentialProblem,
    sentence: string,
    shape: string,
  ) {
    super(`UNAUTHENTICATED: ${sentence} (${shape})`);
  }
}

/** One kind of credential: its prefix and how errors name it ("API key", "keys"). */
export class CredentialFormat {
  constructor(
    readonly prefix: string,
    /** "API key", "access token". */
    private readonly noun: string,
    /** "keys", "tokens". */
    private readonly plural: string,
  ) {}

  generate(): GeneratedCredential {
    // 256 is a multiple of 32, so `byte & 31` picks every base32 character equally often.
    let id = '';
    for (const byte of randomBytes(CREDENTIAL_ID_LENGTH)) id += ID_ALPHABET[byte & 31];
    const secret = randomBytes(SECRET_BYTES).toString('base64url');
    return { id, secret, key: this.format(id, secret) };
  }

  format(id: string, secret: string): string {
    return `${this.prefix}${id}_${secret}`;
  }

  parse(text: string): CredentialParts {
    if (text === '') throw this.error('missing', `no ${this.noun} given`);
    if (!text.startsWith(this.prefix)) throw this.error('wrong_prefix', `${this.noun} does not start with ${this.prefix}`);
    const idEnd = this.prefix.length + CREDENTIAL_ID_LENGTH;
    const id = text.slice(this.prefix.length, idEnd);
    if (!CREDENTIAL_ID_PATTERN.test(id) || text.charAt(idEnd) !== '_') {
      throw this.error('malformed_id', `${this.noun} id is not ${CREDENTIAL_ID_LENGTH} lower-case letters and digits followed by _`);
    }
    const secret = text.slice(idEnd + 1);
    if (!SECRET_PATTERN.test(secret)) {
      throw this.error(
        'malformed_secret',
        `${this.noun} ${id} has a malformed secret: expected 32-256 characters of A-Z a-z 0-9 _ -, got ${secret.length} characters` +
          (/^[A-Za-z0-9_-]*$/.test(secret) ? '' : ' including others'),
      );
    }
    return { id, secret };
  }

  /**
   * Whether `text` is well formed and its secret matches `storedHash`, compared in constant
   * time. A malformed credential is simply false; a malformed stored hash throws, as it is our
   * data that is broken, not the caller's.
   */
  verify(text: string, storedHash: string): boolean {
    const { salt, expected } = parseStoredHash(storedHash, this.noun);
    let secret: string;
    try {
      secret = this.parse(text).secret;
    } catch (err) {
      if (err instanceof CredentialFormatError) return false;
      throw err;
    }
    return timingSafeEqual(digest(salt, secret), expected);
  }

  private error(problem: CredentialProblem, sentence: string): CredentialFormatError {
    return new CredentialFormatError(problem, sentence, `${this.plural} look like ${this.prefix}<12-character id>_<secret>`);
  }
}

/**
 * The stored form of a secret: `hmac-sha256$<salt>$<digest>`, base64url, salt random per
 * credential.
 *
 * Why a fast keyed hash and not scrypt/argon2: those slow a guesser down, which matters for
 * low-entropy passwords. Our secrets are 256 random bits, which no guesser can search at any
 * speed, while services verify a credential on every request and a memory-hard KDF would cost
 * ms of CPU each time. The salt keys the HMAC so equal secrets never hash alike and precomputed
 * tables are useless; the scheme name leaves room to change later.
 */
export function hashSecret(secret: string): string {
  const salt = randomBytes(SALT_BYTES);
  return `${HASH_SCHEME}$${salt.toString('base64url')}$${digest(salt, secret).toString('base64url')}`;
}

function digest(salt: Buffer, secret: string): Buffer {
  return createHmac('sha256', salt).update(secret, 'utf8').digest();
}

function parseStoredHash(stored: string, noun: string): { salt: Buffer; expected: Buffer } {
  const [scheme, salt, expected, ...rest] = stored.split('$');
  const saltBytes = Buffer.from(salt ?? '', 'base64url');
  const expectedBytes = Buffer.from(expected ?? '', 'base64url');
  if (scheme !== HASH_SCHEME || rest.length > 0 || saltBytes.length !== SALT_BYTES || expectedBytes.length !== DIGEST_BYTES) {
    throw new Error(`stored ${noun} hash is not ${HASH_SCHEME}$<16-byte salt>$<32-byte digest> in base64url (scheme ${JSON.stringify(scheme ?? '')})`);
  }
  return { salt: saltBytes, expected: expectedBytes };
}
