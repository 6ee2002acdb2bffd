/**
 * Time as the simulated engine sees it. The engine only reads `now()` and schedules callbacks,
 * so tests drive it with a `ManualClock` and production with `systemClock`.
 */

export type TimerHandle = unknown;

export interface Clock {
  /** Milliseconds from an arbitrary origin, monotonic. */
  now(): number;
  /** Runs `fn` once, `delayMs` from now (asynchronously even when the delay is 0). */
  schedule(delayMs: number, fn: () => void): TimerHandle;
  cancel(handle: TimerHandle): void;
}

interface SystemTimer {
  immediate?: NodeJS.Immediate;
  timeout?: NodeJS.Timeout;
}

/**
 * The process clock. A zero (or negative) delay runs on `setImmediate`, not `setTimeout`, which
 * Node rounds up to 1 ms: an engine with zero latency must not wait a millisecond per step.
 */
export const systemClock: Clock = {
  now: () => performance.now(),
  schedule(delayMs: number, fn: () => void): TimerHandle {
    return delayMs <= 0 ? { immediate: setImmediate(fn) } : { timeout: setTimeout(fn, delayMs) };
  },
  cancel(handle: TimerHandle): void {
    const timer = handle as SystemTimer | undefined;
    if (timer?.immediate) clearImmediate(timer.immediate);
    if (timer?.timeout) clearTimeout(timer.timeout);
  },
};

interface ManualTimer {
  readonly id: number;
  readonly due: number;
  readonly fn: () => void;
  cancelled: boolean;
}

/**
 * A clock that moves only when told to: `advance(ms)` runs every callback that falls due, in
 * due order (ties in scheduling order), with `now()` set to each callback's due time.
 */
export class ManualClock implements Clock {
  private time: number;
  private nextId = 0;
  private timers: ManualTimer[] = [];

  constructor(startMs = 0) {
    this.time = startMs;
  }

  now(): number {
    return this.time;
  }

  schedule(delayMs: number, fn: () => void): TimerHandle {
    const timer: ManualTimer = { id: this.nextId++, due: this.time + Math.max(0, delayMs), fn, cancelled: false };
    this.timers.push(timer);
    return timer;
  }

  cancel(handle: TimerHandle): void {
    const timer = handle as ManualTimer | undefined;
    if (timer) timer.cancelled = true;
  }

  /** Callbacks scheduled and not yet run or cancelled. */
  get pending(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }

  /** Moves time forward by `ms`, running what falls due (including callbacks those schedule). */
  advance(ms: number): void {
    const target = this.time + ms;
    for (;;) {
      let next: ManualTimer | undefined;
      for (const timer of this.timers) {
        if (timer.cancelled || timer.due > target) continue;
        if (!next || timer.due < next.due || (timer.due === next.due && timer.id < next.id)) next = timer;
      }
      if (!next) break;
      this.timers = this.timers.filter((t) => t !== next && !t.cancelled);
      this.time = Math.max(this.time, next.due);
      next.fn();
    }
    this.time = target;
  }

  /** Runs what is due now (zero-delay callbacks) without moving time. */
  flush(): void {
    this.advance(0);
  }
}
