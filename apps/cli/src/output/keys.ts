import { ApiKey, UsageRow } from '@gpufleet/contracts';
import { Column, age } from './format';

/** An instant to the second: `2026-12-29T11:06:02Z`. */
function isoSeconds(at: Date): string {
  return at.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function keyStatus(k: ApiKey, now = Date.now()): 'Active' | 'Revoked' | 'Expired' {
  if (k.revoked) return 'Revoked';
  if (k.expiresAt && k.expiresAt.getTime() <= now) return 'Expired';
  return 'Active';
}

export function keyModels(k: ApiKey): string {
  return k.allModels ? 'all' : k.models.join(',') || '-';
}

function perMinute(n: number | undefined): string {
  return n ? String(n) : '-';
}

export const keyColumns: Column<ApiKey>[] = [
  { header: 'ID', value: (k) => k.id },
  { header: 'NAME', value: (k) => k.name || '-' },
  { header: 'MODELS', value: keyModels },
  { header: 'RPM', value: (k) => perMinute(k.limits?.requestsPerMinute) },
  { header: 'TPM', value: (k) => perMinute(k.limits?.tokensPerMinute) },
  { header: 'EXPIRES', value: (k) => (k.expiresAt ? isoSeconds(k.expiresAt) : 'never') },
  { header: 'STATUS', value: (k) => keyStatus(k) },
  { header: 'AGE', value: (k) => age(k.createdAt) },
];

/** `"ci" (all models, expires 2026-12-29T11:06:02Z, 600 rpm, 200000 tpm)`: what a key may do. */
export function keySummary(k: ApiKey): string {
  const limits = [k.limits?.requestsPerMinute ? `${k.limits.requestsPerMinute} rpm` : '', k.limits?.tokensPerMinute ? `${k.limits.tokensPerMinute} tpm` : ''].filter(Boolean);
  return [
    k.name ? JSON.stringify(k.name) : 'no name',
    k.allModels ? 'every model' : `model(s) ${k.models.join(', ')}`,
    k.expiresAt ? `expires ${isoSeconds(k.expiresAt)}` : 'never expires',
    limits.length > 0 ? `limits ${limits.join(', ')} per model` : 'no rate limits',
  ].join(', ');
}

/** The lines `gpufleet keys create` prints: the full key appears here and nowhere else. */
export function createdKeyLines(k: ApiKey, fullKey: string): string[] {
  return [
    `key/${k.id} created: ${keySummary(k)}`,
    `  ${fullKey}`,
    'warning: this is the only time the full key is shown (only a hash of its secret is stored); save it now',
  ];
}

export const usageColumns: Column<UsageRow>[] = [
  { header: 'DAY', value: (r) => r.day },
  { header: 'KEY', value: (r) => r.keyId },
  { header: 'DEPLOYMENT', value: (r) => r.deployment || '-' },
  { header: 'MODEL', value: (r) => r.model || '-' },
  { header: 'REQUESTS', value: (r) => String(r.requests) },
  { header: 'PROMPT', value: (r) => String(r.promptTokens) },
  { header: 'CACHED', value: (r) => String(r.cachedTokens) },
  { header: 'COMPLETION', value: (r) => String(r.completionTokens) },
];

/** A usage row for `-o json|yaml`: proto3 JSON names, zero counts included (unlike `get`). */
export function usageRowJson(r: UsageRow): Record<string, string | number> {
  return {
    day: r.day,
    keyId: r.keyId,
    deployment: r.deployment,
    model: r.model,
    requests: r.requests,
    promptTokens: r.promptTokens,
    cachedTokens: r.cachedTokens,
    completionTokens: r.completionTokens,
    estimatedRequests: r.estimatedRequests,
  };
}
