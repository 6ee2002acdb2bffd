import { storeKey, workloadKey, type Secret } from '@gpufleet/contracts';
import type { KvStore } from '@gpufleet/messaging';

/**
 * One key of a Secret of the namespace (a hub token), read from the secrets bucket when needed:
 * both roles use it, neither keeps or logs it. Undefined when the Secret or its key is absent.
 */
export async function secretValue(secrets: KvStore<Secret>, namespace: string, name: string, key: string): Promise<string | undefined> {
  const found = await secrets.get(storeKey(workloadKey(namespace, name)));
  return found?.value.data[key];
}
