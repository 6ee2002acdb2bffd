/**
 * Writes the state of keyed objects (InstanceTypes, deployments) to the Kubernetes API,
 * coalesced, bounded and retried. Callers only mark keys dirty; `sync(key)` reads the latest
 * state itself when it runs, so any number of changes to one key between two rounds is one
 * write, and a round writes a key at most once: at most one write per key per `intervalMs`.
 * Memory is bounded: past `maxDirty` keys the set is dropped for one "everything" resync.
 * A failed key is retried with exponential backoff (jittered), never dropped.
 */
export interface KeyedReconcilerOptions {
  /** Least time between two rounds (and so between two writes of one key). */
  readonly intervalMs: number;
  /** Most keys remembered as dirty; beyond it the next round resyncs `allKeys()`. */
  readonly maxDirty: number;
  readonly backoffInitialMs: number;
  readonly backoffMaxMs: number;
  /** Keys written in parallel within a round. */
  readonly concurrency?: number;
}

export interface ReconcilerClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const REAL_CLOCK: ReconcilerClock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

export class KeyedReconciler {
  private readonly dirty = new Set<string>();
  private everything = false;
  private readonly failures = new Map<string, { attempts: number; retryAt: number }>();
  private timer: unknown;
  private running = false;
  private stopped = false;
  private lastRound = -Infinity;

  constructor(
    private readonly sync: (key: string) => Promise<void>,
    private readonly allKeys: () => Iterable<string>,
    private readonly options: KeyedReconcilerOptions,
    private readonly onError: (key: string, err: unknown, attempts: number) => void = () => undefined,
    private readonly clock: ReconcilerClock = REAL_CLOCK,
  ) {}

  mark(key: string): void {
    if (this.stopped) return;
    if (!this.everything) {
      if (this.dirty.size >= this.options.maxDirty && !this.dirty.has(key)) this.markAll();
      else this.dirty.add(key);
    }
    this.schedule();
  }

  /** Every key of `allKeys()` at the next round. */
  markAll(): void {
    if (this.stopped) return;
    this.everything = true;
    this.dirty.clear();
    this.schedule();
  }

  /** Keys waiting for a round (for tests and metrics). */
  get pending(): number {
    return this.everything ? Infinity : this.dirty.size;
  }

  /** True when nothing is dirty, failing or being written. */
  get idle(): boolean {
    return !this.running && !this.everything && this.dirty.size === 0;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.dirty.clear();
    this.failures.clear();
    this.everything = false;
  }

  private schedule(): void {
    if (this.stopped || this.running || this.timer !== undefined) return;
    if (!this.everything && this.dirty.size === 0) return;
    const now = this.clock.now();
    let at = Math.max(now, this.lastRound + this.options.intervalMs);
    if (!this.everything) {
      // Wait for the earliest key that is due (a failing key waits out its backoff).
      let earliest = Infinity;
      for (const k of this.dirty) earliest = Math.min(earliest, this.failures.get(k)?.retryAt ?? now);
      at = Math.max(at, earliest);
    }
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      void this.round();
    }, Math.ceil(at - now));
  }

  private async round(): Promise<void> {
    if (this.stopped) return;
    this.running = true;
    this.lastRound = this.clock.now();
    const now = this.lastRound;
    let keys: string[];
    if (this.everything) {
      this.everything = false;
      keys = [...new Set([...this.allKeys(), ...this.dirty])];
      this.dirty.clear();
    } else {
      keys = [...this.dirty].filter((k) => (this.failures.get(k)?.retryAt ?? now) <= now);
      for (const k of keys) this.dirty.delete(k);
    }
    const queue = [...keys];
    const worker = async (): Promise<void> => {
      for (let key = queue.shift(); key !== undefined && !this.stopped; key = queue.shift()) {
        try {
          await this.sync(key);
          this.failures.delete(key);
        } catch (err) {
          const attempts = (this.failures.get(key)?.attempts ?? 0) + 1;
          const delay = Math.min(this.options.backoffMaxMs, this.options.backoffInitialMs * 2 ** (attempts - 1));
          this.failures.set(key, { attempts, retryAt: Math.ceil(this.clock.now() + delay * (0.8 + 0.4 * Math.random())) });
          this.onError(key, err, attempts);
          if (!this.everything) this.mark(key);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, this.options.concurrency ?? 4) }, worker));
    this.running = false;
    this.schedule();
  }
}
