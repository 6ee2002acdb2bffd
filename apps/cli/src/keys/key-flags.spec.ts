import { checkKeyId, createKeyRequestFromFlags, parseExpires, parseModels, usageRequestFromFlags } from './key-flags';

const NOW = new Date('2026-11-29T12:00:00Z');

describe('parseModels', () => {
  it('is every model by default and for "all"', () => {
    expect(parseModels(undefined)).toEqual({ allModels: true, models: [] });
    expect(parseModels('all')).toEqual({ allModels: true, models: [] });
  });

  it('splits a comma-separated list, trimming and dropping repeats', () => {
    expect(parseModels('llama-3.1-8b, qwen2.5-7b,llama-3.1-8b')).toEqual({ allModels: false, models: ['llama-3.1-8b', 'qwen2.5-7b'] });
  });

  it.each([
    ['a,,b', /^--models "a,,b": expected served model names separated by commas/],
    ['a,', /^--models "a,": expected/],
    ['all,a', /^--models all,a: "all" stands alone/],
  ])('rejects %s naming --models', (value, message) => {
    expect(() => parseModels(value)).toThrow(message);
  });
});

describe('parseExpires', () => {
  it.each([
    ['90s', 90],
    ['90m', 5_400],
    ['12h', 43_200],
    ['30d', 2_592_000],
    ['2w', 1_209_600],
  ])('%s is %i seconds from now', (value, seconds) => {
    expect(parseExpires(value, NOW)).toEqual({ expiresAt: undefined, expiresInSeconds: seconds });
  });

  it.each([
    ['2027-01-31', '2027-01-31T00:00:00.000Z'],
    ['2027-01-31T12:30:00Z', '2027-01-31T12:30:00.000Z'],
    ['2027-01-31T12:30', '2027-01-31T12:30:00.000Z'],
    ['2027-01-31T12:30:00+02:00', '2027-01-31T10:30:00.000Z'],
  ])('%s is an instant (UTC without an offset)', (value, iso) => {
    expect(parseExpires(value, NOW)).toEqual({ expiresAt: new Date(iso), expiresInSeconds: 0 });
  });

  it('is never without the flag', () => {
    expect(parseExpires(undefined, NOW)).toEqual({ expiresAt: undefined, expiresInSeconds: 0 });
  });

  it.each([
    ['0d', /^--expires 0d: expected a duration from 1s to 36500d/],
    ['36501d', /^--expires 36501d: expected a duration from 1s to 36500d/],
    ['2026-11-29', /^--expires 2026-11-29: expected a time in the future \(now is 2026-11-29T12:00:00.000Z\)/],
    ['2027-02-30', /^--expires 2027-02-30: not a valid date/],
    ['2027-01-31T25:00Z', /^--expires 2027-01-31T25:00Z: not a valid date/],
    ['2027-13-01', /^--expires 2027-13-01: not a valid date/],
    ['tomorrow', /^--expires tomorrow: expected a duration such as 30d/],
    ['30 d', /^--expires 30 d: expected a duration/],
  ])('rejects %s naming --expires', (value, message) => {
    expect(() => parseExpires(value, NOW)).toThrow(message);
  });
});

describe('createKeyRequestFromFlags', () => {
  it('defaults to an unnamed key for every model, without expiry or limits', () => {
    expect(createKeyRequestFromFlags({}, NOW)).toEqual({ name: '', allModels: true, models: [], expiresAt: undefined, expiresInSeconds: 0, limits: undefined, labels: {} });
  });

  it('carries name, models, expiry and limits', () => {
    expect(createKeyRequestFromFlags({ name: 'team-a ci', models: 'llama', expires: '30d', rpm: 600 }, NOW)).toEqual({
      name: 'team-a ci',
      allModels: false,
      models: ['llama'],
      expiresAt: undefined,
      expiresInSeconds: 2_592_000,
      limits: { requestsPerMinute: 600, tokensPerMinute: 0 },
      labels: {},
    });
  });

  it('rejects a requests-per-minute limit over the proto field naming --rpm', () => {
    expect(() => createKeyRequestFromFlags({ rpm: 2 ** 32 }, NOW)).toThrow(/^--rpm 4294967296: expected an integer from 0 to 4294967295/);
  });
});

describe('checkKeyId', () => {
  it('accepts a key id, and anonymous where asked to', () => {
    expect(checkKeyId('k3x7q2m9a0bc', 'ID')).toBe('k3x7q2m9a0bc');
    expect(checkKeyId('anonymous', '--key', true)).toBe('anonymous');
    expect(() => checkKeyId('anonymous', 'ID')).toThrow(/^ID "anonymous": expected a key id of 12 lower-case letters and digits \(/);
  });

  it('points out a whole key and says which id to pass', () => {
    expect(() => checkKeyId('gpufleet_k3x7q2m9a0bc_' + 'A'.repeat(43), 'ID')).toThrow(/^ID: that is a whole API key; pass only its id, k3x7q2m9a0bc/);
  });
});

describe('usageRequestFromFlags', () => {
  it('is today, every key and model by default', () => {
    expect(usageRequestFromFlags({})).toEqual({ keyId: '', days: 1, model: '' });
    expect(usageRequestFromFlags({ key: 'anonymous', days: 7, model: 'llama' })).toEqual({ keyId: 'anonymous', days: 7, model: 'llama' });
  });

  it.each([
    [{ days: 0 }, /^--days 0: expected at least 1/],
    [{ key: 'ABC' }, /^--key "ABC": expected a key id/],
    [{ model: ' ' }, /^--model: expected a served model name/],
  ])('rejects %j naming the flag', (flags, message) => {
    expect(() => usageRequestFromFlags(flags)).toThrow(message);
  });
});
