import { type DynamicModule, type INestApplication, Module, type OnApplicationShutdown } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { AddressInfo } from 'node:net';
import { redactConfig } from '@gpufleet/config';
import { createLogger, NestJsonLogger } from '@gpufleet/observability';
import { GrpcLifecycle } from '@gpufleet/service-kit';
import { AppModule } from './app.module';
import type { RouterConfig } from './config';
import { RouterRuntime } from './router.runtime';

export interface RunningRouter {
  readonly app: INestApplication;
  readonly runtime: RouterRuntime;
  /** The OpenAI API. */
  readonly apiPort: number;
  /** /healthz, /readyz, /metrics. */
  readonly opsPort: number;
  readonly grpcPort: number;
  /** Graceful stop, as on SIGTERM. */
  close(): Promise<void>;
}

/** Flushes tracing as the last shutdown step: Nest re-raises SIGTERM after closing. */
function withTracingShutdown(module: DynamicModule, stopTracing: () => Promise<void>): DynamicModule {
  @Module({})
  class RouterRoot implements OnApplicationShutdown {
    async onApplicationShutdown(): Promise<void> {
      await stopTracing().catch(() => undefined);
    }
  }
  return { module: RouterRoot, imports: [module] };
}

/**
 * Builds and starts the router: NATS, the stores' watches, Redis, gRPC (KeyService) on
 * GRPC_PORT, the operations server on OPS_PORT (Nest) and the OpenAI API on HTTP_PORT (raw
 * http). Integration tests call this in-process; main.ts adds signal handling.
 */
export async function createRouter(
  config: RouterConfig,
  options: { stopTracing?: () => Promise<void>; shutdownHooks?: boolean } = {},
): Promise<RunningRouter> {
  const logger = createLogger({ service: 'inference-router', level: config.LOG_LEVEL });
  const module = withTracingShutdown(AppModule.forRoot(config), options.stopTracing ?? (() => Promise.resolve()));
  const app = await NestFactory.create(module, { logger: new NestJsonLogger(logger) });
  if (options.shutdownHooks) app.enableShutdownHooks(['SIGTERM', 'SIGINT']);
  try {
    await app.listen(config.OPS_PORT, config.HOST);
  } catch (err) {
    await app.close().catch(() => undefined);
    throw err;
  }
  const runtime = app.get(RouterRuntime);
  const opsPort = (app.getHttpServer().address() as AddressInfo).port;
  const grpcPort = app.get(GrpcLifecycle).server.port;
  return { app, runtime, apiPort: runtime.port, opsPort, grpcPort, close: () => app.close() };
}

/** main.ts: start, log where everything listens, or log why not and exit 1. */
export async function startRouter(config: RouterConfig, stopTracing: () => Promise<void>): Promise<void> {
  const logger = createLogger({ service: 'inference-router', level: config.LOG_LEVEL });
  try {
    const router = await createRouter(config, { stopTracing, shutdownHooks: true });
    logger.info(
      { config: redactConfig(config) },
      `inference-router ready: api :${router.apiPort}, ops :${router.opsPort}, grpc :${router.grpcPort}`,
    );
  } catch (err) {
    logger.fatal({ err }, `inference-router failed to start: ${(err as Error).message}`);
    await stopTracing().catch(() => undefined);
    process.exit(1);
  }
}
