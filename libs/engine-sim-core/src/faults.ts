/**
 * Fault injection for recovery tests: a seeded error rate, a crash after N requests, and a
 * slow start during which the engine is "loading the model" and not ready.
 */
import type { Clock } from './clock';
import { Rng } from './hash';

export interface FaultSettings {
  /** 0-1: fraction of inference requests answered with an injected server error. */
  readonly errorRate: number;
  /** Crash (exit) once this many inference requests were answered; undefined: never. */
  readonly crashAfter?: number;
  /** ms after start during which the engine is loading and not ready. */
  readonly slowStartMs: number;
  readonly seed: number;
}

export class FaultInjector {
  private readonly rng: Rng;
  private readonly startedAt: number;
  private served = 0;
  private crashed = false;

  constructor(
    readonly settings: FaultSettings,
    private readonly clock: Clock,
  ) {
    this.rng = new Rng(settings.seed ^ 0x27d4eb2f);
    this.startedAt = clock.now();
  }

  /** true while the simulated model load lasts. */
  loading(): boolean {
    return this.loadingLeftMs() > 0;
  }

  loadingLeftMs(): number {
    return Math.max(0, this.startedAt + this.settings.slowStartMs - this.clock.now());
  }

  /** Draws whether this request gets an injected error (deterministic sequence for a seed). */
  injectError(): boolean {
    if (this.settings.errorRate <= 0) return false;
    return this.rng.float() < this.settings.errorRate;
  }

  /** Counts one answered inference request; true exactly once, when the crash is due. */
  countAnswered(): boolean {
    this.served++;
    if (this.crashed || this.settings.crashAfter === undefined || this.served < this.settings.crashAfter) return false;
    this.crashed = true;
    return true;
  }

  get answered(): number {
    return this.served;
  }
}
