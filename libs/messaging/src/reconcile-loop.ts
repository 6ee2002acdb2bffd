import { createCounter, createHistogram, type Counter, type Histogram, type Logger, type Registry } from '@gpufleet/observability';

/** What a pass is given: a way to work through items so that one failing item does not stop the others. */
export interface ReconcilePass {
  /** True once the loop was stopped (leadership lost, shutdown): a long pass should return. */
  readonly stopped: boolean;
  /**
   * Runs `fn` for every item, one after another (or all at once with `parallel`). An item that
   * throws is logged with its name and counted in `gpufleet_reconcile_errors_total`, the pass
   * goes on with the next, and the loop runs again after `retryMs`. Stops early once the loop is
   * stopped.
   */
  each<I>(items: Iterable<I>, nameOf: (item: I) => string, fn: (item: I) => Promise<void> | void, options?: { parallel?: boolean }): Promise<void>;
}

export interface ReconcileLoopOptions {
  /** The loop's name in logs and in the `loop` label of its metrics, e.g. "deployments". */
  name: string;
  /** One pass over everything the loop owns; reads its state fresh each time. */
  pass: (run: ReconcilePass) => Promise<void>;
  logger: Logger;
  registry: Registry;
  /** After a pass with failures, the loop runs again after this long (default 1 s). */
  retryMs?: number;
  /** Runs a pass this often even without a trigger, for plans that depend on time (default: never). */
  resyncMs?: number;
}

interface LoopMetrics {
  passes: Counter<'loop' | 'result'>;
  errors: Counter<'loop'>;
  duration: Histogram<'loop'>;
}

function loopMetrics(registry: Registry): LoopMetrics {
  return {
    passes: createCounter(registry, { name: 'reconcile_passes_total', help: 'Reconcile passes by loop and result (ok: no item failed)', labelNames: ['loop', 'result'] }),
    errors: createCounter(registry, { name: 'reconcile_errors_total', help: 'Items (or whole passes) a reconcile loop failed on', labelNames: ['loop'] }),
    duration: createHistogram(registry, {
      name: 'reconcile_pass_duration_seconds',
      help: 'How long one reconcile pass took',
      labelNames: ['loop'],
      buckets: [0.001, 0.005, 0.025, 0.1, 0.5, 2, 10],
    }),
  };
}

/**
 * The one controller loop: triggers (`kick`) coalesce, one pass runs at a time, a trigger that
 * arrives during a pass makes exactly one more pass after it, and a failure (of one item, or of
 * the pass) is logged, counted and retried after `retryMs` without stopping the other items.
 * Passes start on the next turn of the event loop, so a burst of changes makes one pass.
 */
export class ReconcileLoop {
  private running?: Promise<void>;
  private dirty = false;
  private active = false;
  private scheduled = false;
  private retryTimer?: NodeJS.Timeout;
  private resyncTimer?: NodeJS.Timeout;
  private readonly metrics: LoopMetrics;

  constructor(private readonly options: ReconcileLoopOptions) {
    this.metrics = loopMetrics(options.registry);
  }

  get name(): string {
    return this.options.name;
  }

  get isActive(): boolean {
    return this.active;
  }

  /** Starts taking triggers (again, after a stop) and runs a first pass. */
  start(): void {
    if (this.active) return;
    this.active = true;
    if (this.options.resyncMs !== undefined) {
      this.resyncTimer = setInterval(() => this.kick(), this.options.resyncMs);
      this.resyncTimer.unref();
    }
    this.kick();
  }

  /** Asks for a pass; coalesces with other requests, and with one made during a pass. */
  kick(): void {
    if (!this.active) return;
    this.dirty = true;
    if (this.running || this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (!this.running && this.active && this.dirty) this.running = this.loop().finally(() => (this.running = undefined));
    });
  }

  /** Asks for a pass after `ms` (e.g. once a mirror has caught up with a write). */
  kickAfter(ms: number): void {
    if (!this.active) return;
    const timer = setTimeout(() => this.kick(), ms);
    timer.unref();
  }

  /** Stops taking triggers; resolves when the pass in progress (if any) has returned. */
  stop(): Promise<void> {
    this.active = false;
    this.dirty = false;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    this.retryTimer = this.resyncTimer = undefined;
    return this.running ?? Promise.resolve();
  }

  /** Resolves when no pass is running or asked for (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.running || this.scheduled) await (this.running ?? new Promise((r) => setImmediate(r)));
  }

  private async loop(): Promise<void> {
    while (this.dirty && this.active) {
      this.dirty = false;
      const failed = await this.runPass();
      if (failed && this.active && !this.retryTimer) {
        this.retryTimer = setTimeout(() => {
          this.retryTimer = undefined;
          this.kick();
        }, this.options.retryMs ?? 1_000);
        this.retryTimer.unref();
      }
    }
  }

  /** One pass; true when something in it failed. */
  private async runPass(): Promise<boolean> {
    const { name, logger } = this.options;
    const loop = { loop: name };
    let failures = 0;
    const fail = (err: unknown, item?: string): void => {
      failures++;
      this.metrics.errors.inc(loop);
      const what = item === undefined ? 'pass' : item;
      logger.error({ err, loop: name, item }, `${name}: reconcile of ${what} failed, retrying: ${(err as Error)?.message ?? String(err)}`);
    };
    const isActive = (): boolean => this.active;
    const run: ReconcilePass = {
      get stopped() {
        return !isActive();
      },
      async each(items, nameOf, fn, opts) {
        const one = async (item: Parameters<typeof nameOf>[0]): Promise<void> => {
          try {
            await fn(item);
          } catch (err) {
            fail(err, nameOf(item));
          }
        };
        if (opts?.parallel) {
          await Promise.all([...items].map(one));
          return;
        }
        for (const item of items) {
          if (!isActive()) return;
          await one(item);
        }
      },
    };
    const end = this.metrics.duration.startTimer(loop);
    try {
      await this.options.pass(run);
    } catch (err) {
      fail(err);
    }
    end();
    this.metrics.passes.inc({ ...loop, result: failures === 0 ? 'ok' : 'error' });
    return failures > 0;
  }
}
