import { ApiKeyRecord, authorize } from './authorize';

const NOW = Date.parse('2026-01-15T12:00:00Z');

function record(overrides: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  return { id: 'abcdefghijkl', hash: 'hmac-sha256$x$y', models: '*', revoked: false, ...overrides };
}

describe('authorize', () => {
  it('allows a live key on any model with *, or on a listed model', () => {
    expect(authorize(record(), 'llama-3-8b', NOW)).toEqual({ ok: true });
    expect(authorize(record({ models: ['llama-3-8b', 'qwen'] }), 'qwen', NOW)).toEqual({ ok: true });
    expect(authorize(record({ expiresAt: NOW + 1 }), 'qwen', NOW)).toEqual({ ok: true });
  });

  it('refuses a revoked key first, whatever else is wrong with it', () => {
    expect(authorize(record({ revoked: true, expiresAt: NOW - 1, models: [] }), 'qwen', NOW)).toEqual({
      ok: false,
      reason: 'revoked',
      message: 'API key abcdefghijkl has been revoked',
    });
  });

  it('refuses a key from the instant it expires', () => {
    expect(authorize(record({ expiresAt: NOW }), 'qwen', NOW)).toEqual({
      ok: false,
      reason: 'expired',
      message: 'API key abcdefghijkl expired at 2026-01-15T12:00:00.000Z',
    });
  });

  it('refuses a model the key does not list, saying which it may use', () => {
    expect(authorize(record({ models: ['llama-3-8b'] }), 'qwen', NOW)).toEqual({
      ok: false,
      reason: 'forbidden_model',
      message: 'API key abcdefghijkl may not use model "qwen" (it may use "llama-3-8b")',
    });
    const many = authorize(record({ models: ['a', 'b', 'c', 'd', 'e', 'f', 'g'] }), 'qwen', NOW);
    expect(many.ok === false && many.message).toBe('API key abcdefghijkl may not use model "qwen" (it may use "a", "b", "c", "d", "e" and 2 more)');
    const none = authorize(record({ models: [] }), 'qwen', NOW);
    expect(none.ok === false && none.message).toContain('(it may use no model)');
  });

  it('matches model names exactly', () => {
    expect(authorize(record({ models: ['llama'] }), 'llama-3-8b', NOW).ok).toBe(false);
    expect(authorize(record({ models: ['Llama'] }), 'llama', NOW).ok).toBe(false);
  });
});
