import type { Provider } from '@nestjs/common';
import { needs } from '@gpufleet/access-core';
import { KeyServiceService, ServiceNames, type KeyServiceServer } from '@gpufleet/contracts';
import { authorizeEvery, type AccessRules } from '@gpufleet/grpc-kit';
import { LOGGER, type Logger } from '@gpufleet/observability';
import { GrpcLifecycle, grpcServerOptions } from '@gpufleet/service-kit';
import { ROUTER_CONFIG, type RouterConfig } from './config';
import { KeysGrpc } from './keys/keys.grpc';
import { RouterRuntime } from './router.runtime';

/** API keys are cluster-scoped credentials and usage spans every tenant: admin only. */
export const KEY_RULES: AccessRules<KeyServiceServer> = {
  createKey: () => needs.admin,
  getKey: () => needs.admin,
  listKeys: () => needs.admin,
  revokeKey: () => needs.admin,
  getUsage: () => needs.admin,
};

/** The router's gRPC endpoint on HOST:GRPC_PORT: KeyService, health, reflection. */
export const routerGrpcServer: Provider = {
  provide: GrpcLifecycle,
  inject: [ROUTER_CONFIG, LOGGER, KeysGrpc, RouterRuntime],
  useFactory: (config: RouterConfig, logger: Logger, keys: KeysGrpc, runtime: RouterRuntime) =>
    new GrpcLifecycle(
      grpcServerOptions(config, {
        services: [{ name: ServiceNames.keys, definition: KeyServiceService, implementation: authorizeEvery(keys.implementation, KEY_RULES, runtime.access) }],
        protoFiles: ['gpufleet/v1/router.proto'],
      }),
      logger,
    ),
};
