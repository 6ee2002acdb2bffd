import type { Provider } from '@nestjs/common';
import { needs } from '@gpufleet/access-core';
import { ModelDeliveryServiceService, ServiceNames, type ModelDeliveryServiceServer } from '@gpufleet/contracts';
import { authorizeEvery, type AccessRules } from '@gpufleet/grpc-kit';
import { LOGGER, type Logger } from '@gpufleet/observability';
import { GrpcLifecycle, grpcServerOptions } from '@gpufleet/service-kit';
import { DeliveryAccess } from './access.service';
import { ArtifactsGrpc } from './artifacts/artifacts.grpc';
import { DELIVERY_CONFIG, type DeliveryConfig } from './config';

/** Artifacts are namespaced like deployments: reads need `view`, writes `edit` in the namespace (every namespace when empty). */
export const DELIVERY_RULES: AccessRules<ModelDeliveryServiceServer> = {
  createArtifact: (r) => needs.edit(r.spec?.namespace ?? ''),
  getArtifact: (r) => needs.view(r.namespace),
  listArtifacts: (r) => needs.view(r.namespace),
  deleteArtifact: (r) => needs.edit(r.namespace),
  getManifest: (r) => needs.view(r.namespace),
  watchArtifacts: (r) => needs.view(r.namespace),
};

/** Model delivery's gRPC endpoint on HOST:GRPC_PORT: ModelDeliveryService (control role), health, reflection. */
export const deliveryGrpcServer: Provider = {
  provide: GrpcLifecycle,
  inject: [DELIVERY_CONFIG, LOGGER, DeliveryAccess, { token: ArtifactsGrpc, optional: true }],
  useFactory: (config: DeliveryConfig, logger: Logger, access: DeliveryAccess, artifacts: ArtifactsGrpc | undefined) =>
    new GrpcLifecycle(
      grpcServerOptions(config, {
        services: artifacts
          ? [{ name: ServiceNames.modelDelivery, definition: ModelDeliveryServiceService, implementation: authorizeEvery(artifacts.implementation, DELIVERY_RULES, access.directory) }]
          : [],
        protoFiles: ['gpufleet/v1/model_delivery.proto'],
      }),
      logger,
    ),
};
