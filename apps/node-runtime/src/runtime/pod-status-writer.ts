import { PodRuntimeStatus } from '@gpufleet/contracts';
import type { KvStore } from '@gpufleet/messaging';

export interface PodStatusWriterOptions {
  /** The record to write for a key now; undefined: the pod is gone, delete its record. */
  render(key: string): PodRuntimeStatus | undefined;
  onError(key: string, err: unknown): void;
  /** Bursts of events within this window become one write per pod. Default 50 ms. */
  coalesceMs?: number;
  /** After a failed write (NATS down), the key is written again after this long. Default 1000 ms. */
  retryMs?: number;
}

/**
 * Writes pods' records to the pods bucket. Changes are only marked; a flush renders each marked
 * pod from the live state and writes it, so a burst of process events costs one write and the
 * last state is always the one written (a failed write is retried, never dropped). A record equal
 * to the last one written (but for updated_at) is not rewritten. This runtime is the only writer
 * of its node's keys, so plain puts suffice.
 */
export class PodStatusWriter {
  private readonly dirty = new Set<string>();
  /** What is in the bucket (as this runtime last wrote or found it), to skip repeats and needless deletes. */
  private readonly written = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly store: KvStore<PodRuntimeStatus>,
    private readonly options: PodStatusWriterOptions,
  ) {}

  /** A record that exists in the bucket (found at start): deleted when its pod is not run. */
  known(key: string, status: PodRuntimeStatus): void {
    this.written.set(key, fingerprint(status));
  }

  mark(key: string): void {
    if (this.closed) return;
    this.dirty.add(key);
    this.schedule(this.options.coalesceMs ?? 50);
  }

  /** Writes everything marked now; resolves when done (failed keys stay marked for a retry). */
  async flush(): Promise<void> {
    for (;;) {
      if (this.flushing) {
        await this.flushing;
        continue;
      }
      if (this.dirty.size === 0) return;
      this.flushing = this.writeMarked().finally(() => (this.flushing = undefined));
      await this.flushing;
      return;
    }
  }

  /** No writes after this (runtime shutdown, after a last flush). */
  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(ms: number): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, ms);
  }

  private async writeMarked(): Promise<void> {
    const keys = [...this.dirty];
    this.dirty.clear();
    let failed = false;
    await Promise.all(
      keys.map(async (key) => {
        try {
          const status = this.options.render(key);
          if (status === undefined) {
            if (!this.written.has(key)) return;
            await this.store.delete(key);
            this.written.delete(key);
            return;
          }
          const print = fingerprint(status);
          if (this.written.get(key) === print) return;
          await this.store.put(key, status);
          this.written.set(key, print);
        } catch (err) {
          failed = true;
          if (!this.closed) this.dirty.add(key);
          this.options.onError(key, err);
        }
      }),
    );
    if (failed) this.schedule(this.options.retryMs ?? 1_000);
    else if (this.dirty.size > 0) this.schedule(0);
  }
}

/** The record without updated_at: what makes a write worth doing. */
function fingerprint(status: PodRuntimeStatus): string {
  return JSON.stringify(PodRuntimeStatus.toJSON({ ...status, updatedAt: undefined }));
}
