import type { Logger } from '@gpufleet/observability';
import { KvChange, KvStore, KvWatchHandle } from './kv-store';

/** A mirrored entry: the value and the revision it was written at (the token for compare-and-set). */
export interface MirrorEntry<T> {
  value: T;
  revision: number;
}

/** Told of every change after the mirror applied it; `key` is the mirror's key (see `toKey`). */
export type MirrorListener<T> = (key: string, change: KvChange<T>) => void;

export interface KvMirrorOptions {
  /** Says where watch interruptions and corrupt entries came from. */
  logger: Logger;
  /**
   * The key the mirror files an entry under, from its bucket key; e.g. "<ns>.<name>" in the
   * bucket becomes "<ns>/<name>" in memory. Default: the bucket key.
   */
  toKey?: (storedKey: string) => string;
  /** Only bucket keys this accepts are mirrored (e.g. a node runtime keeps only its own node). */
  filter?: (storedKey: string) => boolean;
}

/**
 * A bucket watched into memory: the latest value and revision of every key, and listeners told
 * of each change after it is applied. The watch resumes from the last revision after NATS
 * restarts (KvStore.watch), so the mirror catches up with what changed meanwhile and never
 * applies a change twice. Corrupt entries are logged and skipped; the last good value stays.
 *
 * Listeners hear changes that arrive after they registered. A reader that needs the initial
 * content as one batch awaits `start()`, reads `entries` and registers its listener in the same
 * synchronous step: nothing is missed or seen twice.
 */
export class KvMirror<T> {
  private readonly map = new Map<string, MirrorEntry<T>>();
  private readonly listeners = new Set<MirrorListener<T>>();
  private handle?: KvWatchHandle;
  private synced = false;

  constructor(
    readonly store: KvStore<T>,
    private readonly options: KvMirrorOptions,
  ) {}

  /** Every mirrored entry by the mirror's key. */
  get entries(): ReadonlyMap<string, MirrorEntry<T>> {
    return this.map;
  }

  get(key: string): MirrorEntry<T> | undefined {
    return this.map.get(key);
  }

  /** True once the bucket's content at start has been mirrored. */
  get ready(): boolean {
    return this.synced;
  }

  /** Starts the watch; resolves once the bucket's current content is mirrored. */
  async start(): Promise<void> {
    if (this.handle) return this.handle.ready;
    const { logger, filter, toKey } = this.options;
    const bucket = this.store.bucket;
    this.handle = this.store.watch(
      (change) => {
        if (filter && !filter(change.key)) return;
        const key = toKey ? toKey(change.key) : change.key;
        if (change.kind === 'put') this.map.set(key, { value: change.value, revision: change.revision });
        else this.map.delete(key);
        for (const listener of [...this.listeners]) {
          try {
            listener(key, change);
          } catch (err) {
            logger.error({ err, bucket, key }, `${bucket}: a listener failed on ${key}: ${(err as Error).message}`);
          }
        }
      },
      {
        onCorrupt: (err) => logger.error({ bucket }, err.message),
        onError: (err) => logger.warn({ bucket, err }, `${bucket} watch interrupted, resuming: ${(err as Error)?.message}`),
        onRelist: ({ lastSeen, bucketLast }) =>
          logger.warn({ bucket, lastSeen, bucketLast }, `${bucket}: revisions went backwards (${lastSeen} seen, the bucket is at ${bucketLast}): it was recreated; listing it again`),
      },
    );
    await this.handle.ready;
    this.synced = true;
  }

  /**
   * Resolves true once the mirror holds `key` (e.g. after this replica wrote it and wants its
   * reads to see it), or false after `timeoutMs`.
   */
  waitFor(key: string, timeoutMs: number): Promise<boolean> {
    if (this.map.has(key)) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (found: boolean): void => {
        clearTimeout(timer);
        off();
        resolve(found);
      };
      const timer = setTimeout(() => done(false), timeoutMs);
      const off = this.listen((k, change) => k === key && change.kind === 'put' && done(true));
    });
  }

  /** Registers a listener; returns the function that removes it. */
  listen(listener: MirrorListener<T>): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stop(): void {
    this.handle?.stop();
    this.listeners.clear();
  }
}
