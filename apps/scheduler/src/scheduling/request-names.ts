import { invalidArgument } from '@gpufleet/grpc-kit';
import { isDns1123Label } from '@gpufleet/scheduling-core';

/** Namespaces and names of workloads, queues, deployments and instances: a malformed one is refused, never looked up. */
export function requireLabel(field: string, value: string): void {
  if (!value) throw invalidArgument(field, 'a non-empty DNS-1123 label');
  if (!isDns1123Label(value)) throw invalidArgument(field, 'a DNS-1123 label (lower-case letters, digits and "-", at most 63)', value);
}
