import type { Provider } from '@nestjs/common';
import { KeyServiceService, ServiceNames } from '@gpufleet/contracts';
import { GrpcLifecycle, grpcServerOptions } from '@gpufleet/service-kit';
import { ROUTER_CONFIG, type RouterConfig } from '../config';
import { RouterRuntime } from '../router.runtime';
import { keysGrpc } from './keys.grpc';

/** The router's gRPC endpoint: KeyService, health, reflection. */
export const routerGrpcServer: Provider = {
  provide: GrpcLifecycle,
  inject: [ROUTER_CONFIG, RouterRuntime],
  useFactory: (config: RouterConfig, runtime: RouterRuntime) =>
    new GrpcLifecycle({
      ...grpcServerOptions(config, {
        services: [
          {
            name: ServiceNames.keys,
            definition: KeyServiceService,
            implementation: keysGrpc({ store: () => runtime.apiKeys, registry: runtime.keys, adminToken: config.GPUFLEET_ADMIN_TOKEN }),
          },
        ],
        protoFiles: ['gpufleet/v1/router.proto'],
      }),
      host: config.HOST,
    }),
};
