import { WorkloadSpec } from '@gpufleet/contracts';

/** "<namespace>/<name>": how ledger entries, events and queues name a workload. */
export function workloadKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export function keyOfSpec(spec: Pick<WorkloadSpec, 'namespace' | 'name'>): string {
  return workloadKey(spec.namespace, spec.name);
}

/** KV keys cannot hold '/', and DNS labels hold no '.', so "<namespace>.<name>" is unambiguous. */
export function storeKey(key: string): string {
  return key.replace('/', '.');
}

export function keyOfStoreKey(stored: string): string {
  const dot = stored.indexOf('.');
  return `${stored.slice(0, dot)}/${stored.slice(dot + 1)}`;
}
