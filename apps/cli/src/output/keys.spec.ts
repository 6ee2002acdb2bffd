import { ApiKey, UsageRow } from '@gpufleet/contracts';
import { renderTable } from './format';
import { createdKeyLines, keyColumns, keyStatus, keySummary, usageColumns, usageRowJson } from './keys';

const created = new Date(Date.now() - 90_000);
const key = (partial: Partial<ApiKey>): ApiKey => ApiKey.fromPartial({ id: 'k3x7q2m9a0bc', createdAt: created, ...partial });

describe('keys output', () => {
  it('lists keys with their scope, limits, expiry and status', () => {
    const keys = [
      key({ name: 'team-a ci', models: ['llama-3.1-8b', 'qwen'], limits: { requestsPerMinute: 600, tokensPerMinute: 200_000 }, expiresAt: new Date('2099-12-29T11:06:02.123Z') }),
      key({ id: 'aaaaaaaaaaaa', allModels: true, revoked: true }),
    ];
    expect(renderTable(keys, keyColumns, false).split('\n')).toEqual([
      'ID             NAME        MODELS              RPM   TPM      EXPIRES                STATUS    AGE',
      'k3x7q2m9a0bc   team-a ci   llama-3.1-8b,qwen   600   200000   2099-12-29T11:06:02Z   Active    90s',
      'aaaaaaaaaaaa   -           all                 -     -        never                  Revoked   90s',
    ]);
  });

  it('calls a key past its expiry Expired', () => {
    expect(keyStatus(key({ expiresAt: new Date(Date.now() - 1) }))).toBe('Expired');
  });

  it('summarises a new key and prints the full key once, with the warning', () => {
    expect(keySummary(key({ allModels: true }))).toBe('no name, every model, never expires, no rate limits');
    expect(keySummary(key({ name: 'ci', models: ['llama'], limits: { requestsPerMinute: 0, tokensPerMinute: 1000 } }))).toBe(
      '"ci", model(s) llama, never expires, limits 1000 tpm per model',
    );
    const lines = createdKeyLines(key({ allModels: true }), 'gpufleet_k3x7q2m9a0bc_secret');
    expect(lines).toEqual([
      'key/k3x7q2m9a0bc created: no name, every model, never expires, no rate limits',
      '  gpufleet_k3x7q2m9a0bc_secret',
      expect.stringMatching(/^warning: this is the only time the full key is shown/),
    ]);
  });
});

describe('usage output', () => {
  const row: UsageRow = {
    day: '2026-11-29',
    keyId: 'anonymous',
    deployment: 'team-a.llama',
    model: 'llama-3.1-8b',
    requests: 2,
    promptTokens: 20,
    cachedTokens: 0,
    completionTokens: 10,
    estimatedRequests: 0,
  };

  it('prints DAY KEY DEPLOYMENT MODEL REQUESTS PROMPT CACHED COMPLETION', () => {
    expect(renderTable([row], usageColumns, false).split('\n')).toEqual([
      'DAY          KEY         DEPLOYMENT     MODEL          REQUESTS   PROMPT   CACHED   COMPLETION',
      '2026-11-29   anonymous   team-a.llama   llama-3.1-8b   2          20       0        10',
    ]);
  });

  it('keeps zero counts in json', () => {
    expect(usageRowJson(row)).toEqual({ ...row });
  });
});
