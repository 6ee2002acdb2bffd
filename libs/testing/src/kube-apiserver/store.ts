/**
 * The object store: one global resourceVersion, objects by kind and key, a bounded event history
 * for watch replay, and fan-out to open watches. Semantics (defaults, finalizers, status) live in
 * resources.ts; this module only stores, versions and notifies.
 */
import { gone } from './errors';
import { clone, KubeObject } from './types';

export type StoredEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoredEvent {
  type: StoredEventType;
  resourceVersion: number;
  /** `group/resource`: storage is shared by every version of a kind. */
  kindKey: string;
  object: KubeObject;
  /** The object before a MODIFIED, so a watch with a selector can turn it into ADDED or DELETED. */
  previous?: KubeObject;
}

export type StoreListener = (event: StoredEvent) => void;

const objectKey = (kindKey: string, namespace: string | undefined, name: string): string => `${kindKey}|${namespace ?? ''}|${name}`;

export class ObjectStore {
  private revision = 1;
  private readonly objects = new Map<string, KubeObject>();
  private history: StoredEvent[] = [];
  /** Highest resourceVersion no longer in history: a watch from below it gets 410. */
  private compactedThrough = 0;
  private readonly listeners = new Set<StoreListener>();

  constructor(private readonly historyLimit: number) {}

  get resourceVersion(): number {
    return this.revision;
  }

  get(kindKey: string, namespace: string | undefined, name: string): KubeObject | undefined {
    const obj = this.objects.get(objectKey(kindKey, namespace, name));
    return obj && clone(obj);
  }

  /** Objects of a kind (in one namespace, or all), ordered by namespace then name. */
  list(kindKey: string, namespace?: string): KubeObject[] {
    const prefix = namespace === undefined ? `${kindKey}|` : `${kindKey}|${namespace}|`;
    return [...this.objects.entries()]
      .filter(([k]) => k.startsWith(prefix))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, o]) => clone(o));
  }

  /** Every stored object with its kind key: what garbage collection scans for owner references. */
  entries(): { kindKey: string; object: KubeObject }[] {
    return [...this.objects.entries()].map(([k, o]) => ({ kindKey: k.slice(0, k.indexOf('|')), object: clone(o) }));
  }

  /** Store an object under a new resourceVersion and tell the watches. */
  write(kindKey: string, obj: KubeObject): KubeObject {
    const key = objectKey(kindKey, obj.metadata.namespace, obj.metadata.name ?? '');
    const previous = this.objects.get(key);
    const stored = clone(obj);
    stored.metadata.resourceVersion = String(++this.revision);
    this.objects.set(key, stored);
    this.record({ type: previous ? 'MODIFIED' : 'ADDED', resourceVersion: this.revision, kindKey, object: stored, previous });
    return clone(stored);
  }

  remove(kindKey: string, obj: KubeObject): KubeObject | undefined {
    const key = objectKey(kindKey, obj.metadata.namespace, obj.metadata.name ?? '');
    const previous = this.objects.get(key);
    if (!previous) return undefined;
    this.objects.delete(key);
    const deleted = clone(previous);
    deleted.metadata.resourceVersion = String(++this.revision);
    this.record({ type: 'DELETED', resourceVersion: this.revision, kindKey, object: deleted });
    return clone(deleted);
  }

  private record(event: StoredEvent): void {
    this.history.push(event);
    if (this.history.length > this.historyLimit) {
      const dropped = this.history.splice(0, this.history.length - this.historyLimit);
      this.compactedThrough = dropped[dropped.length - 1].resourceVersion;
    }
    for (const listener of [...this.listeners]) listener(event);
  }

  /** Events of a kind after `resourceVersion`, or 410 when history no longer reaches back that far. */
  eventsSince(kindKey: string, resourceVersion: number): StoredEvent[] {
    if (resourceVersion < this.compactedThrough) {
      throw gone(`too old resource version: ${resourceVersion} (${this.compactedThrough + 1})`);
    }
    return this.history.filter((e) => e.kindKey === kindKey && e.resourceVersion > resourceVersion);
  }

  /** Forget all history, as a compaction of etcd does: any watch resuming from before now gets 410. */
  compact(): void {
    this.history = [];
    this.compactedThrough = this.revision;
  }

  subscribe(listener: StoreListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
