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

/**
 * `object` with the spec-hash annotation: the digest of the object as gpufleet writes it, that
 * annotation and the devices annotation left out. The devices are the kubelet's to choose: when
 * the ledger is corrected to what the kubelet assigned, the desired devices change while the
 * running Pod is the right one, and must not be replaced for it.
 */
export function withSpecHash<T extends Annotated>(object: T): T {
  const annotations = { ...(object.metadata?.annotations ?? {}) };
  delete annotations[KubeAnnotations.specHash];
  const hashed = { ...annotations };
  delete hashed[KubeAnnotations.devices];
  const bare = { ...object, metadata: { ...object.metadata, annotations: hashed } };
  return { ...object, metadata: { ...object.metadata, annotations: { ...annotations, [KubeAnnotations.specHash]: digest(bare) } } };
}

/** The spec-hash annotation of an object; '' when it has none (written by something else, or by hand). */
export function specHashOf(object: Annotated): string {
  return object.metadata?.annotations?.[KubeAnnotations.specHash] ?? '';
}
