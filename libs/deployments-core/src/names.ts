import { randomBytes } from 'crypto';

/** Deployment names leave room in a 63-character workload name for "-<role letter><ordinal>-<suffix>". */
export const MAX_DEPLOYMENT_NAME = 40;
/** Instance names leave room for "-<suffix>". */
export const MAX_INSTANCE_NAME = 50;
/** Replicas per role: enough for any one model on one cluster, small enough to bound a status record. */
export const MAX_REPLICAS = 256;

const ROLE_LETTER: Record<string, string> = { server: 's', prefill: 'p', decode: 'd' };
const SUFFIX_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** Five characters from an alphabet without vowels (no accidental words), like Kubernetes' pod suffixes. */
export function randomSuffix(random: (n: number) => Buffer = randomBytes): string {
  return [...random(5)].map((b) => SUFFIX_ALPHABET[b % SUFFIX_ALPHABET.length]).join('');
}

/**
 * The workload of one replica: "<deployment>-<s|p|d><ordinal>-<suffix>". Every (re)creation gets
 * a fresh suffix, so a replaced replica never reuses the key of the workload it replaces (whose
 * release may still be in flight).
 */
export function replicaWorkloadName(deployment: string, role: string, ordinal: number, suffix: string): string {
  return `${deployment}-${ROLE_LETTER[role] ?? 'r'}${ordinal}-${suffix}`;
}

export function instanceWorkloadName(instance: string, suffix: string): string {
  return `${instance}-${suffix}`;
}
