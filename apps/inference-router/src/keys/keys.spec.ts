import { status } from '@grpc/grpc-js';
import { CreateKeyRequest } from '@gpufleet/contracts';
import { ApiError } from '@gpufleet/openai-protocol';
import { formatApiKey, hashSecret } from '@gpufleet/routing-core';
import { keyView, newKeyRecord, publicKey } from './key-records';
import { ANONYMOUS, KeyRegistry } from './key-registry';
import { usageQuery, utcDays } from './usage-report';

const NOW = new Date('2026-01-01T00:00:00Z');
const request = (partial: Partial<CreateKeyRequest>): CreateKeyRequest => CreateKeyRequest.fromPartial({ name: 'k', ...partial });

describe('newKeyRecord', () => {
  it('stores only a hash and shows the full key once', () => {
    const { record, fullKey } = newKeyRecord(request({ models: ['a', 'a', 'b'], expiresInSeconds: 60, limits: { requestsPerMinute: 5, tokensPerMinute: 0 } }), NOW);
    const id = record.key?.id ?? '';
    expect(fullKey.startsWith(`gpufleet_${id}_`)).toBe(true);
    expect(record.secretHash).toMatch(/^hmac-sha256\$/);
    expect(JSON.stringify(record)).not.toContain(fullKey.slice(`gpufleet_${id}_`.length));
    expect(record.key?.models).toEqual(['a', 'b']);
    expect(record.key?.expiresAt).toEqual(new Date(NOW.getTime() + 60_000));
    expect(publicKey(record)).not.toHaveProperty('secretHash');
    expect(keyView(record)).toMatchObject({ id, models: ['a', 'b'], revoked: false, limits: { requestsPerMinute: 5, tokensPerMinute: undefined } });
  });

  it.each([
    [{ models: [] }, 'models'],
    [{ allModels: true, models: ['a'] }, 'models'],
    [{ models: [' a'] }, 'models[0]'],
    [{ allModels: true, expiresAt: new Date('2025-01-01T00:00:00Z') }, 'expires_at'],
    [{ allModels: true, expiresAt: new Date('2027-01-01T00:00:00Z'), expiresInSeconds: 5 }, 'expires_in_seconds'],
    [{ allModels: true, labels: { 'bad key!': 'x' } }, 'labels.bad key!'],
    // Past ten years the expiry stops being a date a client can use (and once was an INTERNAL error).
    [{ allModels: true, expiresInSeconds: 1e15 }, 'expires_in_seconds'],
    [{ allModels: true, expiresInSeconds: 10 * 365 * 24 * 3600 + 1 }, 'expires_in_seconds'],
  ] as [Partial<CreateKeyRequest>, string][])('rejects %j naming %s', (partial, field) => {
    try {
      newKeyRecord(request(partial), NOW);
      throw new Error('accepted');
    } catch (err) {
      expect((err as { code: number }).code).toBe(status.INVALID_ARGUMENT);
      expect((err as Error).message).toContain(`${field}:`);
    }
  });
});

describe('KeyRegistry', () => {
  const { record, fullKey } = newKeyRecord(request({ allModels: true }), NOW);
  const id = record.key?.id ?? '';

  it('authenticates a stored key and refuses wrong, malformed, missing and revoked ones', () => {
    const registry = new KeyRegistry(true);
    registry.apply({ kind: 'put', key: id, value: record, revision: 1 });
    expect(registry.authenticate(`Bearer ${fullKey}`)).toMatchObject({ keyId: id });
    const wrong = registry.authenticate(`Bearer ${formatApiKey(id, 'x'.repeat(43))}`);
    expect(wrong).toBeInstanceOf(ApiError);
    expect((wrong as ApiError).status).toBe(401);
    expect((registry.authenticate('Bearer gpufleet_short') as ApiError).message).toContain('Invalid API key');
    expect((registry.authenticate(undefined) as ApiError).message).toContain('Missing API key');
    expect((registry.authenticate('Bearer sk-openai') as ApiError).status).toBe(401);

    const revoked = { ...record, key: { ...publicKey(record), revoked: true } };
    registry.apply({ kind: 'put', key: id, value: revoked, revision: 2 });
    expect((registry.authenticate(`Bearer ${fullKey}`) as ApiError).message).toContain('revoked');
    // An older revision (delivered late by the watch) does not undo the revocation.
    registry.apply({ kind: 'put', key: id, value: record, revision: 1 });
    expect(registry.authenticate(`Bearer ${fullKey}`)).toBeInstanceOf(ApiError);
    registry.apply({ kind: 'delete', key: id, revision: 3 });
    expect(registry.size).toBe(0);
  });

  it('runs requests without a gpufleet key as anonymous when auth is not required, but still checks gpufleet keys', () => {
    const registry = new KeyRegistry(false);
    expect(registry.authenticate(undefined)).toBe(ANONYMOUS);
    expect(registry.authenticate('Bearer EMPTY')).toBe(ANONYMOUS);
    expect(registry.authenticate(`Bearer ${fullKey}`)).toBeInstanceOf(ApiError);
  });

  it('does not trust a record stored under another id', () => {
    const registry = new KeyRegistry(true);
    registry.apply({ kind: 'put', key: 'aaaaaaaaaaaa', value: { key: publicKey(record), secretHash: hashSecret('s') }, revision: 1 });
    expect(registry.size).toBe(0);
  });
});

describe('GetUsage requests', () => {
  const query = (partial: { keyId?: string; days?: number; model?: string }) => usageQuery({ keyId: '', days: 0, model: '', ...partial }, 30);

  it('reads empty fields as every key and model, and days 0 as today', () => {
    expect(query({})).toEqual({ keyId: undefined, days: 1, model: undefined });
    expect(query({ keyId: 'anonymous', days: 30, model: 'llama' })).toEqual({ keyId: 'anonymous', days: 30, model: 'llama' });
  });

  it.each([
    ['more days than are kept', { days: 31 }, 'days: expected 1 to 30'],
    ['a full key for an id', { keyId: 'gpufleet_abc' }, 'key_id: expected'],
    ['an over-long model name', { model: 'm'.repeat(257) }, 'model: expected'],
  ])('rejects %s naming the field', (_what, partial, message) => {
    expect(() => query(partial)).toThrow(message);
  });

  it('counts UTC days back from today, today included', () => {
    expect(utcDays(new Date('2026-03-01T23:59:59Z'), 3)).toEqual(['2026-03-01', '2026-02-28', '2026-02-27']);
    expect(utcDays(new Date('2026-03-02T00:00:00Z'), 1)).toEqual(['2026-03-02']);
  });
});
