import type { SecretKeyRef, SecretMetadata } from '@gpufleet/contracts';
import { describeSecretRef } from '@gpufleet/deployments-core';
import { Column, age } from './format';

/** `A=1 HF_TOKEN=secret:hf-token/token`: plain values as they are, references as `secret:NAME/KEY`. */
export function envLine(env: Readonly<Record<string, string>> | undefined, refs?: Readonly<Record<string, SecretKeyRef>>): string {
  return [...Object.entries(env ?? {}).map(([k, v]) => `${k}=${v}`), ...Object.entries(refs ?? {}).map(([k, r]) => `${k}=${describeSecretRef(r)}`)].join(' ');
}

/** Secrets as `gpufleet get secrets` lists them: key names, never values (the API has none). */
export const secretColumns: Column<SecretMetadata>[] = [
  { header: 'NAMESPACE', value: (s) => s.namespace },
  { header: 'NAME', value: (s) => s.name },
  { header: 'KEYS', value: (s) => String(s.keys.length) },
  { header: 'KEY NAMES', value: (s) => s.keys.join(',') || '-', wideOnly: true },
  { header: 'SIZE', value: (s) => `${s.sizeBytes}B`, wideOnly: true },
  { header: 'GENERATION', value: (s) => String(s.generation), wideOnly: true },
  { header: 'AGE', value: (s) => age(s.createdAt) },
];
