import type { Provider } from '@nestjs/common';
import type Redis from 'ioredis';
import { KeyServiceService, ServiceNames } from '@gpufleet/contracts';
import { GrpcLifecycle, grpcServerOptions } from '@gpufleet/service-kit';
import { ROUTER_CONFIG, type RouterConfig } from '../config';
import { REDIS } from '../redis';
import { RouterRuntime } from '../router.runtime';
import { keysGrpc } from './keys.grpc';
import { UsageReport } from './usage-report';

/** The router's gRPC endpoint: KeyService, health, reflection. */
export const routerGrpcServer: Provider = {
  provide: GrpcLifecycle,
  inject: [ROUTER_CONFIG, RouterRuntime, REDIS],
  useFactory: (config: RouterConfig, runtime: RouterRuntime, redis: Redis) =>
    new GrpcLifecycle({
      ...grpcServerOptions(config, {
        services: [
          {
            name: ServiceNames.keys,
            definition: KeyServiceService,
            implementation: keysGrpc({
              store: () => runtime.apiKeys,
              registry: runtime.keys,
              adminToken: config.GPUFLEET_ADMIN_TOKEN,
              usage: new UsageReport(redis, config.GPUFLEET_CLUSTER),
              retentionDays: config.USAGE_RETENTION_DAYS,
            }),
          },
        ],
        protoFiles: ['gpufleet/v1/router.proto'],
      }),
      host: config.HOST,
    }),
};
