import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { DEFAULT_READINESS_TIMEOUT_MS, evaluateReadiness, type ReadinessCheck, type ReadinessReport } from '../health';
import { OBSERVABILITY_OPTIONS } from './observability.constants';
import type { ObservabilityModuleOptions } from './observability.options';

/**
 * The service's readiness checks. Checks come from `forRoot({ readiness })` or are registered
 * later by the provider that owns the dependency (`readiness.register({ name: 'nats', check })`
 * in `onModuleInit`). Once shutdown begins the service reports not ready, so load balancers
 * stop sending work while it drains.
 */
@Injectable()
export class Readiness implements OnModuleDestroy {
  private readonly checks: ReadinessCheck[];
  private shutdownReason: string | undefined;

  constructor(@Inject(OBSERVABILITY_OPTIONS) private readonly options: ObservabilityModuleOptions) {
    this.checks = [...(options.readiness ?? [])];
  }

  /** Adds a check; returns a function that removes it again. */
  register(check: ReadinessCheck): () => void {
    if (this.checks.some((c) => c.name === check.name)) {
      throw new Error(`readiness check "${check.name}" is already registered`);
    }
    this.checks.push(check);
    return () => {
      const index = this.checks.indexOf(check);
      if (index >= 0) this.checks.splice(index, 1);
    };
  }

  /** From now on /readyz answers 503 `shutdown: <reason>`. Called on module destroy too. */
  markShuttingDown(reason = 'shutting down'): void {
    this.shutdownReason ??= reason;
  }

  get names(): string[] {
    return this.checks.map((c) => c.name);
  }

  async evaluate(): Promise<ReadinessReport> {
    const report = await evaluateReadiness(this.checks, this.options.readinessTimeoutMs ?? DEFAULT_READINESS_TIMEOUT_MS);
    if (this.shutdownReason === undefined) return report;
    return {
      ready: false,
      checks: [{ name: 'shutdown', ok: false, reason: this.shutdownReason, durationMs: 0 }, ...report.checks],
    };
  }

  onModuleDestroy(): void {
    this.markShuttingDown();
  }
}
