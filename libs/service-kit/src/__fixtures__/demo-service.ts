// A minimal service on the shared bootstrap, for bootstrap.int.spec.ts: ops server, gRPC with
// health only, a provider that drains on shutdown. DEMO_FAIL=1 makes a provider fail at start.
import { type BeforeApplicationShutdown, type DynamicModule, Inject, Injectable, Module } from '@nestjs/common';
import { createLogger, LOGGER, type Logger, ObservabilityModule } from '@gpufleet/observability';
import { GrpcLifecycle, grpcServerOptions, type ServiceListenConfig } from '../index';

@Injectable()
class Worker implements BeforeApplicationShutdown {
  constructor(@Inject(LOGGER) private readonly logger: Logger) {}

  async beforeApplicationShutdown(): Promise<void> {
    this.logger.info('draining');
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface DemoConfig extends ServiceListenConfig {
  readonly FAIL: boolean;
}

export function demoModule(config: DemoConfig, logger: Logger): DynamicModule {
  @Module({})
  class DemoModule {}
  return {
    module: DemoModule,
    imports: [ObservabilityModule.forRoot({ service: 'demo', logger, httpMiddleware: false })],
    providers: [
      Worker,
      {
        provide: 'BROKEN',
        useFactory: () => {
          if (config.FAIL) throw new Error('NATS_UNREACHABLE: no server at nats://127.0.0.1:1');
          return true;
        },
      },
      {
        provide: GrpcLifecycle,
        inject: [LOGGER],
        useFactory: (log: Logger) => new GrpcLifecycle(grpcServerOptions(config, { services: [], protoFiles: [] }), log),
      },
    ],
  };
}

export function demoLogger(config: DemoConfig): Logger {
  return createLogger({ service: 'demo', level: config.LOG_LEVEL });
}
