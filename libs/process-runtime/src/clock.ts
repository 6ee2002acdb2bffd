/** Time and timers, injectable so that unit tests drive backoff schedules without waiting. */
export interface Clock {
  /** ms since the epoch */
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** Opaque to callers: whatever the clock's setTimeout returned. */
export type TimerHandle = unknown;

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** A clock that only moves when told to: `advance(ms)` runs the timers that fall due, in order. */
export class ManualClock implements Clock {
  private current: number;
  private seq = 0;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  constructor(start = 1_700_000_000_000) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = ++this.seq;
    this.timers.set(id, { at: this.current + Math.max(0, ms), fn });
    return { id };
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers.delete((handle as { id: number }).id);
  }

  /** Pending timers' due times, soonest first (relative to now). */
  pending(): number[] {
    return [...this.timers.values()].map((t) => t.at - this.current).sort((a, b) => a - b);
  }

  /** Moves time forward, running each timer that falls due (timers it sets run too when due). */
  async advance(ms: number): Promise<void> {
    const end = this.current + ms;
    for (;;) {
      await settle();
      let nextId: number | undefined;
      let next: { at: number; fn: () => void } | undefined;
      for (const [id, t] of this.timers) {
        if (t.at <= end && (!next || t.at < next.at || (t.at === next.at && id < (nextId ?? Infinity)))) {
          next = t;
          nextId = id;
        }
      }
      if (!next || nextId === undefined) break;
      this.timers.delete(nextId);
      this.current = Math.max(this.current, next.at);
      next.fn();
    }
    this.current = end;
    await settle();
  }
}

/** Lets every pending promise callback run (a macrotask turn drains the microtask queue). */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
