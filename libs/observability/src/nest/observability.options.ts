import type { FactoryProvider, ModuleMetadata } from '@nestjs/common';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { ReadinessCheck } from '../health';

export interface ObservabilityModuleOptions {
  /** The service name (`service` label and log field). */
  readonly service: string;
  /** Served on /metrics; default `createMetricsRegistry({ service })`. */
  readonly registry?: Registry;
  /** Checks /readyz runs; more can be added through `Readiness.register`. */
  readonly readiness?: readonly ReadinessCheck[];
  /** ms each readiness check may take (default 2000). */
  readonly readinessTimeoutMs?: number;
  /** Injected as `LOGGER` and used by the HTTP middleware; default `createLogger({ service })`. */
  readonly logger?: Logger;
  /** Log and measure every HTTP request (`gpufleet_http_*`); default true. */
  readonly httpMiddleware?: boolean;
}

/**
 * `forRootAsync`: readiness checks built from injected providers. `inject` tokens must be
 * visible to this module: exported by a global module or by a module listed in `imports`.
 * (Alternatively, a provider registers its own check with `Readiness.register` in `onModuleInit`.)
 */
export interface ObservabilityModuleAsyncOptions extends Omit<ObservabilityModuleOptions, 'readiness'> {
  readonly imports?: ModuleMetadata['imports'];
  readonly inject?: FactoryProvider['inject'];
  /** Receives the `inject`ed providers in order. */
  readonly readiness: (...deps: never[]) => readonly ReadinessCheck[] | Promise<readonly ReadinessCheck[]>;
}
