import { InvalidArgumentError } from 'commander';
import type { SecretKeyRef } from '@gpufleet/contracts';

/** A commander parser for a non-negative integer flag; the error names the flag. */
export function intArg(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${flag}: expected a non-negative integer, got "${value}"`);
    return n;
  };
}

/** A commander parser for a repeatable flag: every occurrence is kept, in order. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `K=V` pairs of a repeatable flag as a map; the value may itself hold `=`. */
export function parseEnvPairs(values: readonly string[] | undefined, flag: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of values ?? []) {
    const eq = pair.indexOf('=');
    const key = eq < 0 ? pair : pair.slice(0, eq);
    if (eq < 0 || !ENV_NAME.test(key)) {
      throw new Error(`${flag} ${pair}: expected NAME=VALUE with NAME made of letters, digits and '_' (not starting with a digit)`);
    }
    env[key] = pair.slice(eq + 1);
  }
  return env;
}

/**
 * `VAR=SECRET/KEY` pairs of a repeatable flag (`--env-secret HF_TOKEN=hf/token`) as references
 * to keys of Secrets in the object's namespace; a variable may not also be given by value.
 */
export function parseSecretRefs(values: readonly string[] | undefined, flag: string, plain: Readonly<Record<string, string>> = {}): Record<string, SecretKeyRef> {
  const refs: Record<string, SecretKeyRef> = {};
  for (const pair of values ?? []) {
    const match = /^([A-Za-z_][A-Za-z0-9_]*)=([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([-._a-zA-Z0-9]+)$/.exec(pair);
    if (!match) throw new Error(`${flag} ${pair}: expected VAR=SECRET/KEY (e.g. HF_TOKEN=hf-token/token), SECRET a Secret of the namespace, KEY one of its keys`);
    const [, name, secret, , key] = match;
    if (name in plain) throw new Error(`${flag} ${pair}: ${name} is also given with --env; give each variable once`);
    refs[name] = { name: secret, key };
  }
  return refs;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Throws unless `value` is a DNS-1123 label of at most `max` characters. */
export function checkDnsLabel(value: string, max: number, flag: string): string {
  if (!DNS_LABEL.test(value) || value.length > max) {
    throw new Error(
      `${flag} ${JSON.stringify(value)}: expected a DNS-1123 label (lower-case letters, digits and '-', starting and ending with a letter or digit, at most ${max} characters)`,
    );
  }
  return value;
}

/** Throws unless `value` is within [min, max]; the error names the flag. */
export function checkRange(value: number, min: number, max: number, flag: string, unit = ''): number {
  if (value < min || value > max) throw new Error(`${flag} ${value}: expected an integer from ${min} to ${max}${unit ? ` (${unit})` : ''}`);
  return value;
}

/** `--scheduler`, as every command that calls the scheduler takes it. */
export const SCHEDULER_FLAG = ['--scheduler <host:port>', 'scheduler gRPC address (default: from the stack context)'] as const;
