import type { SecretKeyRef } from '@gpufleet/contracts';
import { PodPlanError } from './errors';

/** The Secrets a pod's references are resolved from: the secrets bucket, as the runtime mirrors it. */
export interface SecretLookup {
  /** The data of Secret `namespace/name`; undefined when there is none. */
  get(namespace: string, name: string): Readonly<Record<string, string>> | undefined;
}

/**
 * The values of a pod's `env_from_secret`, read from Secrets of its namespace at the moment it is
 * planned. Throws SECRET_NOT_FOUND naming every missing Secret or key (never a value): the pod is
 * reported Failed with that message and planned again when a Secret changes.
 */
export function resolveSecretEnv(namespace: string, refs: Readonly<Record<string, SecretKeyRef>>, secrets: SecretLookup | undefined): Record<string, string> {
  const env: Record<string, string> = {};
  const missing: string[] = [];
  for (const [name, ref] of Object.entries(refs).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const data = secrets?.get(namespace, ref.name);
    const id = `${namespace}/${ref.name}`;
    if (data === undefined) missing.push(`secret ${id} does not exist (env ${name})`);
    else if (!Object.prototype.hasOwnProperty.call(data, ref.key)) missing.push(`secret ${id} has no key ${ref.key} (env ${name})`);
    else env[name] = data[ref.key];
  }
  if (missing.length > 0) {
    throw new PodPlanError('SECRET_NOT_FOUND', `${missing.join('; ')}; create it with \`gpufleet create secret NAME -n ${namespace} --from-literal KEY=VALUE\`, and the pod starts`);
  }
  return env;
}
