import { createHash } from 'crypto';
import { KubeAnnotations } from './names';

/** A digest that does not depend on the order of object keys. */
export function digest(value: unknown): string {
  return `sha256:${createHash('sha256').update(JSON.stringify(value, sortedKeys)).digest('hex').slice(0, 32)}`;
}

function sortedKeys(_key: string, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

interface Annotated {
  metadata?: { annotations?: { [key: string]: string } };
}

interface Owned {
  metadata?: { ownerReferences?: unknown[] };
}

/**
 * `object` with the spec-hash annotation: the digest of the object as gpufleet writes it, that
 * annotation and what is changed in place (`inPlaceMetadataOf`) left out.
 */
export function withSpecHash<T extends Annotated & Owned>(object: T): T {
  const annotations = { ...(object.metadata?.annotations ?? {}) };
  delete annotations[KubeAnnotations.specHash];
  const hashed = { ...annotations };
  delete hashed[KubeAnnotations.devices];
  const metadata: Record<string, unknown> = { ...object.metadata, annotations: hashed };
  delete metadata.ownerReferences;
  const bare = { ...object, metadata };
  return { ...object, metadata: { ...object.metadata, annotations: { ...annotations, [KubeAnnotations.specHash]: digest(bare) } } };
}

/** The spec-hash annotation of an object; '' when it has none (written by something else, or by hand). */
export function specHashOf(object: Annotated): string {
  return object.metadata?.annotations?.[KubeAnnotations.specHash] ?? '';
}

/**
 * What gpufleet changes on a live Pod in place, never replacing it: the devices annotation (the
 * kubelet chooses the devices, and a ledger corrected to its choice must not replace the Pod)
 * and the owner references (an owning custom resource can become known after the Pod was made).
 * Both are mutable metadata. As a string, to compare.
 */
export function inPlaceMetadataOf(object: Annotated & Owned): string {
  return JSON.stringify([object.metadata?.annotations?.[KubeAnnotations.devices] ?? '', object.metadata?.ownerReferences ?? []], sortedKeys);
}
