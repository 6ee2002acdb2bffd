import { ApiKeyFormatError, formatApiKey, generateApiKey, hashSecret, parseApiKey, verifyKey } from './api-key';

describe('API keys', () => {
  it('generates gpufleet_<12 base32 id>_<43 base64url secret>, different every time', () => {
    const a = generateApiKey();
    const b = generateApiKey();
    expect(a.id).toMatch(/^[a-z2-7]{12}$/);
    expect(a.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a.key).toBe(`gpufleet_${a.id}_${a.secret}`);
    expect(b.id).not.toBe(a.id);
    expect(b.secret).not.toBe(a.secret);
  });

  it('parses what it generates, even when the secret contains _', () => {
    for (let i = 0; i < 200; i++) {
      const { id, secret, key } = generateApiKey();
      expect(parseApiKey(key)).toEqual({ id, secret });
    }
    expect(parseApiKey(formatApiKey('abcdefghij23', `_${'x'.repeat(40)}_`))).toEqual({ id: 'abcdefghij23', secret: `_${'x'.repeat(40)}_` });
  });

  it.each([
    ['', 'missing', 'no API key given'],
    ['sk-abc', 'wrong_prefix', 'API key does not start with gpufleet_'],
    ['gpufleet_ABCDEFGHIJKL_' + 'x'.repeat(43), 'malformed_id', 'API key id is not 12 lower-case letters and digits followed by _'],
    ['gpufleet_abc_' + 'x'.repeat(43), 'malformed_id', 'API key id is not 12'],
    ['gpufleet_abcdefghijkl' + 'x'.repeat(43), 'malformed_id', 'API key id is not 12'],
    ['gpufleet_abcdefghijkl_short', 'malformed_secret', 'API key abcdefghijkl has a malformed secret: expected 32-256 characters of A-Z a-z 0-9 _ -, got 5 characters'],
    ['gpufleet_abcdefghijkl_' + 'x'.repeat(40) + '!!', 'malformed_secret', 'got 42 characters including others'],
  ])('rejects %j as %s', (key, problem, sentence) => {
    let error: unknown;
    try {
      parseApiKey(key);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ApiKeyFormatError);
    expect((error as ApiKeyFormatError).problem).toBe(problem);
    expect((error as ApiKeyFormatError).message).toContain(sentence);
    expect((error as ApiKeyFormatError).message).toMatch(/^UNAUTHENTICATED: .*keys look like gpufleet_<12-character id>_<secret>\)$/);
  });

  it('never repeats the secret in an error', () => {
    const secret = 'S3cr3t'.repeat(6) + '!';
    expect(() => parseApiKey(`gpufleet_abcdefghijkl_${secret}`)).toThrow(ApiKeyFormatError);
    try {
      parseApiKey(`gpufleet_abcdefghijkl_${secret}`);
    } catch (err) {
      expect((err as Error).message).not.toContain('S3cr3t');
    }
  });

  it('hashes a secret with a fresh salt each time and verifies the key against it', () => {
    const { key, secret } = generateApiKey();
    const stored = hashSecret(secret);
    expect(stored).toMatch(/^hmac-sha256\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(hashSecret(secret)).not.toBe(stored);
    expect(verifyKey(key, stored)).toBe(true);
  });

  it('refuses a wrong secret, another key and a malformed key', () => {
    const { id, key, secret } = generateApiKey();
    const stored = hashSecret(secret);
    const flipped = secret.slice(0, -1) + (secret.endsWith('A') ? 'B' : 'A');
    expect(verifyKey(formatApiKey(id, flipped), stored)).toBe(false);
    expect(verifyKey(generateApiKey().key, stored)).toBe(false);
    expect(verifyKey(key.slice(0, 20), stored)).toBe(false);
    expect(verifyKey('', stored)).toBe(false);
  });

  it('throws on a stored hash it cannot read: that is our data, not the caller', () => {
    const { key } = generateApiKey();
    expect(() => verifyKey(key, 'sha1$abc$def')).toThrow('stored API key hash is not hmac-sha256$<16-byte salt>$<32-byte digest> in base64url (scheme "sha1")');
    expect(() => verifyKey(key, 'hmac-sha256$c2FsdA$ZGlnZXN0')).toThrow('stored API key hash is not');
  });
});
