import { invalidArgument } from '@gpufleet/grpc-kit';
import { isDns1123Label } from '@gpufleet/scheduling-core';

/** Namespaces and names of workloads, queues, deployments and instances: a malformed one is refused, never looked up. */
export function requireLabel(field: string, value: string): void {
  if (!value) throw invalidArgument(field, 'a non-empty DNS-1123 label');
  if (!isDns1123Label(value)) throw invalidArgument(field, 'a DNS-1123 label (lower-case letters, digits and "-", at most 63)', value);
}

/**
 * Encoded bytes of a spec at most. Every field has its own bound, but together they could
 * still pass 1 MiB, NATS's max_payload, where storing the record failed with INTERNAL; the
 * status written next to the spec needs room too.
 */
export const MAX_SPEC_BYTES = 512 * 1024;

export function requireSpecSize(bytes: number): void {
  if (bytes > MAX_SPEC_BYTES) {
    throw invalidArgument('spec', `at most ${MAX_SPEC_BYTES / 1024} KiB encoded (a record must stay well under NATS's max_payload of 1 MiB)`, `${Math.ceil(bytes / 1024)} KiB`);
  }
}
