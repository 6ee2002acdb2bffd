import { DynamicModule, Module, OnApplicationShutdown } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { redactConfig } from '@gpufleet/config';
import { createLogger, NestJsonLogger } from '@gpufleet/observability';
import type { LogLevel } from '@gpufleet/config';

export interface ServiceBootstrapOptions<C extends object> {
  service: string;
  config: C & { HTTP_PORT: number; GRPC_PORT: number; LOG_LEVEL: LogLevel };
  module: DynamicModule;
  stopTracing: () => Promise<void>;
}

/**
 * Wraps the service's module so that tracing is flushed as the last shutdown step: Nest
 * re-raises SIGTERM after closing, so `beforeExit` would never run.
 */
function withTracingShutdown(module: DynamicModule, stopTracing: () => Promise<void>): DynamicModule {
  @Module({})
  class ServiceRoot implements OnApplicationShutdown {
    async onApplicationShutdown(): Promise<void> {
      await stopTracing().catch(() => undefined);
    }
  }
  return { module: ServiceRoot, imports: [module] };
}

/**
 * Starts a gpufleet service: JSON logs, HTTP (/healthz, /readyz, /metrics) on HTTP_PORT,
 * graceful shutdown on SIGTERM/SIGINT (stop taking work, drain, flush, exit). A start-up
 * failure is logged with its reason and exits 1.
 */
export async function bootstrapService<C extends object>(opts: ServiceBootstrapOptions<C>): Promise<void> {
  const { config, service } = opts;
  const logger = createLogger({ service, level: config.LOG_LEVEL });
  try {
    const app = await NestFactory.create(withTracingShutdown(opts.module, opts.stopTracing), { logger: new NestJsonLogger(logger) });
    app.enableShutdownHooks(['SIGTERM', 'SIGINT']);
    await app.listen(config.HTTP_PORT, '0.0.0.0');
    logger.info({ config: redactConfig(config) }, `${service} ready: http :${config.HTTP_PORT}, grpc :${config.GRPC_PORT}`);
  } catch (err) {
    logger.fatal({ err }, `${service} failed to start: ${(err as Error).message}`);
    await opts.stopTracing();
    process.exit(1);
  }
}
