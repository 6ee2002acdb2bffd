import { JetStreamClient, KV, KvEntry, KvWatchInclude, QueuedIterator, StorageType } from 'nats';
import { JsonCodec } from '@gpufleet/contracts';

/** A value with the revision it was written at (the token for compare-and-set). */
export interface Versioned<T> {
  key: string;
  value: T;
  revision: number;
}

export type KvChange<T> =
  | { kind: 'put'; key: string; value: T; revision: number }
  | { kind: 'delete'; key: string; revision: number };

/** A compare-and-set write lost: someone else wrote the key since `expected` was read. */
export class RevisionConflictError extends Error {
  constructor(
    readonly bucket: string,
    readonly key: string,
    readonly expected: number | 'absent',
    /** Set when KvStore.modify gave up after this many tries. */
    readonly attempts?: number,
  ) {
    super(
      attempts === undefined
        ? `REVISION_CONFLICT: ${bucket}/${key} changed since revision ${expected}; re-read and retry`
        : `REVISION_CONFLICT: ${bucket}/${key} kept changing: ${attempts} compare-and-set tries lost to other writers; retry later`,
    );
  }
}

/** An entry that does not decode as the bucket's message type. */
export class CorruptEntryError extends Error {
  constructor(bucket: string, key: string, reason: string) {
    super(`CORRUPT_ENTRY: ${bucket}/${key}: ${reason}`);
  }
}

const KEY = /^[-/_=.a-zA-Z0-9]+$/;

export function assertKey(key: string): void {
  if (!KEY.test(key) || key.startsWith('.') || key.endsWith('.')) {
    throw new Error(`key "${key}" is invalid: expected letters, digits, '-', '_', '/', '=' or '.', not starting or ending with '.'`);
  }
}

export interface KvStoreOptions {
  /** Revisions kept per key. */
  history?: number;
  storage?: 'file' | 'memory';
  /**
   * How long open() keeps trying while JetStream does not answer (NATS restarting, slow, or its
   * JetStream not up yet), or while the bucket is missing and this identity may not create it,
   * before it gives up (default 60 s). Other errors end it at once.
   */
  openTimeoutMs?: number;
  /** Told of each failed try that open() will make again. */
  onOpenRetry?: (err: Error, attempt: number) => void;
}

/**
 * A JetStream API call that failed for want of an answer, which a later try may get: a timeout,
 * no responders (503: JetStream not up, or the server gone), or a cluster's temporary
 * unavailability (10008).
 */
export function isJetStreamUnavailable(err: unknown): boolean {
  const code = String((err as { code?: unknown })?.code ?? '');
  const message = (err as Error)?.message ?? '';
  return code === 'TIMEOUT' || code === '503' || code === 'CONNECTION_CLOSED' || /timeout|no responders|temporarily unavailable|10008/i.test(message);
}

/**
 * The server refused a publish or subscription this identity has no permission for (nats.js
 * rejects the request at once with PERMISSIONS_VIOLATION).
 */
export function isPermissionDenied(err: unknown): boolean {
  const code = String((err as { code?: unknown })?.code ?? '');
  return code === 'PERMISSIONS_VIOLATION' || /permissions violation/i.test((err as Error)?.message ?? '');
}

/** What a `modify` function returns to delete the key instead of writing it. */
export const DELETE_ENTRY: unique symbol = Symbol('delete entry');

/**
 * The change `modify` makes, decided from the current entry (undefined: the key is absent):
 * a new value to write, DELETE_ENTRY to delete it, or undefined to leave it as it is.
 */
export type Modification<T> = (current: Versioned<T> | undefined) => T | typeof DELETE_ENTRY | undefined;

export interface ModifyOptions<T> {
  /**
   * What the caller already holds (e.g. from a mirror), tried first instead of reading the key;
   * when it is stale the compare-and-set fails and the key is read again.
   */
  known?: Versioned<T> | 'absent';
}

/**
 * The one retry policy of compare-and-set read-modify-write: this many tries, the first at
 * once, then after a short jittered backoff (a few ms, doubling, at most 100 ms) so writers that
 * collide do not collide again in lockstep.
 */
export const MODIFY_ATTEMPTS = 10;

function modifyBackoffMs(attempt: number): number {
  return Math.min(100, 2 ** attempt) * (0.5 + Math.random() / 2);
}

export interface KvWatchHandle {
  /** Resolves once every existing key has been delivered. */
  readonly ready: Promise<void>;
  stop(): void;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * JSON.parse's error without the excerpt of the input Node quotes in it ("Unexpected token 'h',
 * "hf_…" is not valid JSON"): the entry may hold a secret, and this message is logged.
 */
function parseErrorWithoutExcerpt(err: unknown): string {
  const message = (err as Error)?.message ?? String(err);
  return message.replace(/^Unexpected token '.*?', ".*" is not valid JSON$/s, 'not valid JSON').replace(/"[^]*"/g, '"…"');
}

function isConflict(err: unknown): boolean {
  const msg = (err as Error)?.message ?? '';
  return /wrong last sequence|key exists|10071/i.test(msg);
}

/**
 * State of record in a JetStream key-value bucket: typed values (proto3 JSON), reads with
 * revisions, compare-and-set writes, and watches that survive NATS restarts by resuming
 * from the last revision seen.
 */
export class KvStore<T> {
  private constructor(
    private readonly kv: KV,
    readonly bucket: string,
    private readonly codec: JsonCodec<T>,
  ) {}

  /**
   * Opens the bucket, creating it when missing. Services open their buckets as they start, often
   * at the same moment as the nats-server they use: a JetStream that does not answer yet is
   * waited for (see openTimeoutMs) rather than failing the service's start.
   */
  static async open<T>(js: JetStreamClient, bucket: string, codec: JsonCodec<T>, options: KvStoreOptions = {}): Promise<KvStore<T>> {
    const deadline = Date.now() + (options.openTimeoutMs ?? 60_000);
    for (let attempt = 1; ; attempt++) {
      try {
        const kv = await js.views.kv(bucket, {
          history: options.history ?? 5,
          storage: options.storage === 'memory' ? StorageType.Memory : StorageType.File,
        });
        return new KvStore(kv, bucket, codec);
      } catch (err) {
        // Refused: this identity may read the bucket but not create it (docs/security.md): its
        // owner (the scheduler, for most buckets) creates it, so wait for that as for JetStream.
        const refused = isPermissionDenied(err);
        const notYetCreated = refused && /STREAM\.CREATE/.test((err as Error).message);
        if (!(isJetStreamUnavailable(err) || notYetCreated) || Date.now() >= deadline) {
          const why = notYetCreated
            ? ' (this NATS identity may not create the bucket: its owner, the scheduler or for api-keys the router, has not created it yet)'
            : refused
              ? ' (this NATS identity may not use the bucket; see docs/security.md)'
              : '';
          throw new Error(`opening KV bucket ${bucket}: ${(err as Error).message}${why}`, { cause: err });
        }
        options.onOpenRetry?.(err as Error, attempt);
        await new Promise((r) => setTimeout(r, Math.min(100 * 2 ** attempt, 2_000)));
      }
    }
  }

  private encode(value: T): Uint8Array {
    return encoder.encode(JSON.stringify(this.codec.toJSON(value)));
  }

  decode(entry: Pick<KvEntry, 'key' | 'value'>): T {
    let json: unknown;
    try {
      json = JSON.parse(decoder.decode(entry.value));
    } catch (err) {
      throw new CorruptEntryError(this.bucket, entry.key, `not JSON (${parseErrorWithoutExcerpt(err)})`);
    }
    if (typeof json !== 'object' || json === null) throw new CorruptEntryError(this.bucket, entry.key, 'not a JSON object');
    return this.codec.fromJSON(json);
  }

  async get(key: string): Promise<Versioned<T> | undefined> {
    assertKey(key);
    const entry = await this.kv.get(key);
    if (!entry || entry.operation !== 'PUT') return undefined;
    return { key, value: this.decode(entry), revision: entry.revision };
  }

  /** Unconditional write; returns the new revision. */
  put(key: string, value: T): Promise<number> {
    assertKey(key);
    return this.kv.put(key, this.encode(value));
  }

  /** Writes only if the key does not exist (or was deleted). */
  async create(key: string, value: T): Promise<number> {
    assertKey(key);
    try {
      return await this.kv.create(key, this.encode(value));
    } catch (err) {
      if (isConflict(err)) throw new RevisionConflictError(this.bucket, key, 'absent');
      throw err;
    }
  }

  /** Writes only if the key is still at `expectedRevision` (compare-and-set). */
  async update(key: string, value: T, expectedRevision: number): Promise<number> {
    assertKey(key);
    try {
      return await this.kv.update(key, this.encode(value), expectedRevision);
    } catch (err) {
      if (isConflict(err)) throw new RevisionConflictError(this.bucket, key, expectedRevision);
      throw err;
    }
  }

  async delete(key: string, expectedRevision?: number): Promise<void> {
    assertKey(key);
    try {
      await this.kv.delete(key, expectedRevision === undefined ? undefined : { previousSeq: expectedRevision });
    } catch (err) {
      if (isConflict(err)) throw new RevisionConflictError(this.bucket, key, expectedRevision ?? 'absent');
      throw err;
    }
  }

  /**
   * Read-modify-write with compare-and-set: reads the key, asks `fn` for the change, writes it
   * only if nobody wrote the key meanwhile, and on a conflict reads again and asks `fn` again
   * (MODIFY_ATTEMPTS tries in all). `fn` may therefore run several times and must not have
   * side effects. Returns the entry as it is afterwards (undefined: absent); throws
   * RevisionConflictError when every try lost.
   */
  async modify(key: string, fn: Modification<T>, options: ModifyOptions<T> = {}): Promise<Versioned<T> | undefined> {
    assertKey(key);
    let current: Versioned<T> | undefined | 'read' = options.known === 'absent' ? undefined : (options.known ?? 'read');
    let lastConflict: RevisionConflictError | undefined;
    for (let attempt = 0; attempt < MODIFY_ATTEMPTS; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, modifyBackoffMs(attempt)));
      if (current === 'read') current = await this.get(key);
      const next = fn(current);
      if (next === undefined) return current;
      try {
        if (next === DELETE_ENTRY) {
          if (current === undefined) return undefined;
          await this.delete(key, current.revision);
          return undefined;
        }
        const revision = current === undefined ? await this.create(key, next) : await this.update(key, next, current.revision);
        return { key, value: next, revision };
      } catch (err) {
        if (!(err instanceof RevisionConflictError)) throw err;
        lastConflict = err;
        current = 'read';
      }
    }
    throw new RevisionConflictError(this.bucket, key, lastConflict?.expected ?? 'absent', MODIFY_ATTEMPTS);
  }

  async keys(): Promise<string[]> {
    const out: string[] = [];
    for await (const k of await this.kv.keys()) out.push(k);
    return out.sort();
  }

  /** Every live entry; corrupt entries are reported through `onCorrupt` and skipped. */
  async list(onCorrupt?: (err: CorruptEntryError) => void): Promise<Versioned<T>[]> {
    const out: Versioned<T>[] = [];
    for (const key of await this.keys()) {
      try {
        const v = await this.get(key);
        if (v) out.push(v);
      } catch (err) {
        if (err instanceof CorruptEntryError && onCorrupt) onCorrupt(err);
        else throw err;
      }
    }
    return out;
  }

  /**
   * Delivers the latest value of every key, then every change. If the watch breaks (NATS
   * restarted, consumer lost), it is re-established from the last revision seen, so no change
   * is missed and none is delivered twice. If the bucket's revisions went backwards meanwhile
   * (it was recreated, or a server lost its store), the watch lists the bucket again: every key
   * is delivered afresh and the keys that are gone are delivered as deletes, instead of every
   * later write being ignored as old.
   */
  watch(
    onChange: (change: KvChange<T>) => void,
    options: {
      onCorrupt?: (err: CorruptEntryError) => void;
      onError?: (err: unknown) => void;
      /** Told when the watch lists the bucket again because its revisions went backwards. */
      onRelist?: (info: { lastSeen: number; bucketLast: number }) => void;
      retryMs?: number;
      /**
       * How often the bucket's last revision is compared with the last one seen (default 5 s):
       * a watch on a deleted stream does not always end, so a recreated bucket is found this way.
       */
      revisionCheckMs?: number;
    } = {},
  ): KvWatchHandle {
    let stopped = false;
    let lastRevision = 0;
    let iterator: QueuedIterator<KvEntry> | undefined;
    let markReady: () => void = () => undefined;
    const ready = new Promise<void>((resolve) => (markReady = resolve));
    /** Keys that exist as far as this watch has delivered: what a re-list must delete when gone. */
    const live = new Set<string>();
    /** During a re-list: the keys its snapshot held. */
    let relisted: Set<string> | undefined;

    const deliver = (entry: KvEntry): void => {
      if (relisted === undefined && entry.revision <= lastRevision) return;
      lastRevision = entry.revision;
      if (entry.operation !== 'PUT') {
        live.delete(entry.key);
        onChange({ kind: 'delete', key: entry.key, revision: entry.revision });
        return;
      }
      live.add(entry.key);
      relisted?.add(entry.key);
      try {
        onChange({ kind: 'put', key: entry.key, value: this.decode(entry), revision: entry.revision });
      } catch (err) {
        if (err instanceof CorruptEntryError) options.onCorrupt?.(err);
        else options.onError?.(err);
      }
    };

    /** The re-list's snapshot is in: what it did not hold is gone. */
    const endRelist = (): void => {
      const seen = relisted;
      relisted = undefined;
      if (seen === undefined) return;
      for (const key of [...live]) {
        if (seen.has(key)) continue;
        live.delete(key);
        onChange({ kind: 'delete', key, revision: lastRevision });
      }
    };

    const loop = async (): Promise<void> => {
      while (!stopped) {
        try {
          if (lastRevision > 0) {
            const bucketLast = (await this.kv.status()).streamInfo.state.last_seq;
            if (bucketLast < lastRevision) {
              options.onRelist?.({ lastSeen: lastRevision, bucketLast });
              relisted = new Set();
              lastRevision = 0;
            }
          }
          const initialized = (): void => {
            endRelist();
            markReady();
          };
          iterator = await this.kv.watch(
            lastRevision === 0
              ? { include: KvWatchInclude.LastValue, initializedFn: initialized }
              : { resumeFromRevision: lastRevision + 1, initializedFn: initialized },
          );
          const current = iterator;
          const check = setInterval(() => {
            this.kv.status().then(
              (st) => {
                // Behind what this watch saw: the bucket was recreated; end the watch to re-list.
                if (st.streamInfo.state.last_seq < lastRevision) current.stop();
              },
              () => undefined, // NATS away: the watch itself reports and resumes
            );
          }, options.revisionCheckMs ?? 5_000);
          check.unref();
          try {
            for await (const entry of iterator) deliver(entry);
          } finally {
            clearInterval(check);
          }
        } catch (err) {
          if (!stopped) options.onError?.(err);
        }
        if (!stopped) await new Promise((r) => setTimeout(r, options.retryMs ?? 500));
      }
    };
    void loop();
    return {
      ready,
      stop: () => {
        stopped = true;
        iterator?.stop();
        markReady();
      },
    };
  }
}
