import { DynamicModule, Module } from '@nestjs/common';
import { hostname } from 'node:os';
import { MessagingModule, NATS_CONNECTION, natsReadiness, natsSettingsFromConfig } from '@gpufleet/messaging';
import { createLogger, createMetricsRegistry, ObservabilityModule } from '@gpufleet/observability';
import type { NatsConnection } from 'nats';
import { ROUTER_CONFIG, type RouterConfig } from './config';
import { routerGrpcServer } from './grpc.server';
import { KeysGrpc } from './keys/keys.grpc';
import { createRedis, REDIS } from './redis';
import { RouterRuntime } from './router.runtime';

@Module({})
export class AppModule {
  static forRoot(config: RouterConfig): DynamicModule {
    return {
      module: AppModule,
      global: true,
      imports: [
        MessagingModule.forRoot({ nats: natsSettingsFromConfig(config, `inference-router@${hostname()}`), cluster: config.GPUFLEET_CLUSTER }),
        ObservabilityModule.forRootAsync({
          service: 'inference-router',
          logger: createLogger({ service: 'inference-router', level: config.LOG_LEVEL }),
          registry: createMetricsRegistry({ service: 'inference-router' }),
          inject: [NATS_CONNECTION],
          readiness: (nc: NatsConnection) => [natsReadiness(nc)],
        }),
      ],
      providers: [
        { provide: ROUTER_CONFIG, useValue: config },
        { provide: REDIS, useFactory: () => createRedis(config) },
        RouterRuntime,
        KeysGrpc,
        routerGrpcServer,
      ],
      exports: [ROUTER_CONFIG],
    };
  }
}
