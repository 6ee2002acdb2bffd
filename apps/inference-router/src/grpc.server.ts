import type { Provider } from '@nestjs/common';
import { KeyServiceService, ServiceNames } from '@gpufleet/contracts';
import { LOGGER, type Logger } from '@gpufleet/observability';
import { GrpcLifecycle, grpcServerOptions } from '@gpufleet/service-kit';
import { ROUTER_CONFIG, type RouterConfig } from './config';
import { KeysGrpc } from './keys/keys.grpc';

/** The router's gRPC endpoint on HOST:GRPC_PORT: KeyService, health, reflection. */
export const routerGrpcServer: Provider = {
  provide: GrpcLifecycle,
  inject: [ROUTER_CONFIG, LOGGER, KeysGrpc],
  useFactory: (config: RouterConfig, logger: Logger, keys: KeysGrpc) =>
    new GrpcLifecycle(
      grpcServerOptions(config, {
        services: [{ name: ServiceNames.keys, definition: KeyServiceService, implementation: keys.implementation }],
        protoFiles: ['gpufleet/v1/router.proto'],
      }),
      logger,
    ),
};
