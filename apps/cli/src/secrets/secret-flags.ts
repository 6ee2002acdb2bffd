import { readFileSync } from 'fs';
import { basename } from 'path';
import type { PutSecretRequest } from '@gpufleet/contracts';
import { checkSecretKey, SECRET_LIMITS, secretSize } from '@gpufleet/deployments-core';
import { checkDnsLabel } from '../flags';

/** The flags of `gpufleet create secret NAME`, as commander hands them over. */
export interface SecretFlags {
  namespace?: string;
  /** `KEY=VALUE`, repeatable. */
  fromLiteral?: string[];
  /** `KEY=PATH` or `PATH` (the key is the file's name), repeatable. */
  fromFile?: string[];
}

/**
 * `gpufleet create secret NAME --from-literal K=V --from-file K=PATH` as a PutSecret request.
 * Errors name the flag and the key, never the value (it may be a token pasted on the command line).
 */
export function putSecretRequestFromFlags(name: string, f: SecretFlags, readFile: (path: string) => string = (p) => readFileSync(p, 'utf8')): PutSecretRequest {
  checkDnsLabel(name, 63, 'NAME');
  const namespace = checkDnsLabel(f.namespace ?? 'default', 63, '--namespace');
  const data: Record<string, string> = {};
  const add = (flag: string, key: string, value: string): void => {
    const bad = checkSecretKey('KEY', key);
    if (bad) throw new Error(`${flag}: KEY ${JSON.stringify(key)}: expected ${bad.expected}`);
    if (key in data) throw new Error(`${flag}: key ${key} is given twice; give each key once`);
    if (value.includes('\0')) throw new Error(`${flag}: the value of ${key} holds a NUL character; a secret value becomes an environment variable, which cannot hold one`);
    data[key] = value;
  };
  for (const pair of f.fromLiteral ?? []) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`--from-literal: expected KEY=VALUE, got ${eq < 0 ? 'no "="' : 'an empty KEY'}`);
    add('--from-literal', pair.slice(0, eq), pair.slice(eq + 1));
  }
  for (const spec of f.fromFile ?? []) {
    const eq = spec.indexOf('=');
    const [key, path] = eq < 0 ? [basename(spec), spec] : [spec.slice(0, eq), spec.slice(eq + 1)];
    let content: string;
    try {
      content = readFile(path);
    } catch (err) {
      throw new Error(`--from-file ${spec}: cannot read ${path}: ${(err as Error).message}`);
    }
    add('--from-file', key, content);
  }
  if (Object.keys(data).length === 0) throw new Error('create secret: give at least one --from-literal KEY=VALUE or --from-file KEY=PATH');
  if (Object.keys(data).length > SECRET_LIMITS.keys) throw new Error(`create secret: at most ${SECRET_LIMITS.keys} keys, got ${Object.keys(data).length}`);
  const size = secretSize(data);
  if (size > SECRET_LIMITS.totalBytes) throw new Error(`create secret: at most ${SECRET_LIMITS.totalBytes / 1024} KiB of keys and values in all, got ${Math.ceil(size / 1024)} KiB`);
  return { namespace, name, data };
}
