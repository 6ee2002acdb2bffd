import type { INestApplication } from '@nestjs/common';
import { startService, type FlushTracing, type ServiceOptions } from '@gpufleet/service-kit';
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

/**
 * The router as the shared bootstrap starts it: NATS, the stores' watches, Redis, gRPC
 * (KeyService) on GRPC_PORT, the operations server on OPS_PORT (Nest) and the OpenAI API on
 * HTTP_PORT (raw http, opened by RouterRuntime), all on HOST.
 */
export function routerService(config: RouterConfig, stopTracing?: FlushTracing): ServiceOptions<RouterConfig> {
  return {
    service: 'inference-router',
    config,
    module: AppModule.forRoot(config),
    stopTracing,
    ports: (app) => ({ api: app.get(RouterRuntime).port }),
  };
}

/** In-process, for integration tests: `startService`, with the router's parts at hand. */
export async function createRouter(config: RouterConfig): Promise<RunningRouter> {
  const running = await startService(routerService(config));
  const runtime = running.app.get(RouterRuntime);
  return { app: running.app, runtime, apiPort: runtime.port, opsPort: running.opsPort, grpcPort: running.grpcPort ?? 0, close: () => running.close() };
}
