import { Provider } from '@nestjs/common';
import { CapacityServiceService, DeploymentServiceService, InstanceServiceService, QueueServiceService, SchedulingServiceService, SecretServiceService, ServiceNames } from '@gpufleet/contracts';
import { LOGGER, type Logger } from '@gpufleet/observability';
import { requireAdminOnEvery } from '@gpufleet/grpc-kit';
import { GrpcLifecycle, grpcServerOptions } from '@gpufleet/service-kit';
import { CapacityGrpc } from './capacity/capacity.grpc';
import { SCHEDULER_CONFIG, SchedulerConfig } from './config';
import { QueuesGrpc } from './scheduling/queues.grpc';
import { SchedulingGrpc } from './scheduling/scheduling.grpc';
import { DeploymentsGrpc } from './scheduling/deployments.grpc';
import { InstancesGrpc } from './scheduling/instances.grpc';
import { SecretsGrpc } from './secrets/secrets.grpc';

/** The scheduler's gRPC endpoint: CapacityService, SchedulingService, QueueService, health, reflection. */
export const schedulerGrpcServer: Provider = {
  provide: GrpcLifecycle,
  inject: [SCHEDULER_CONFIG, LOGGER, CapacityGrpc, SchedulingGrpc, QueuesGrpc, DeploymentsGrpc, InstancesGrpc, SecretsGrpc],
  useFactory: (config: SchedulerConfig, logger: Logger, capacity: CapacityGrpc, scheduling: SchedulingGrpc, queues: QueuesGrpc, deployments: DeploymentsGrpc, instances: InstancesGrpc, secrets: SecretsGrpc) => {
    // With GPUFLEET_ADMIN_TOKEN set, every method and watch needs it (QueueService checks it
    // itself, with its readiness guard). Per-namespace roles replace this later (issue 12).
    const token = config.GPUFLEET_ADMIN_TOKEN;
    return new GrpcLifecycle(
      grpcServerOptions(config, {
        services: [
          { name: ServiceNames.capacity, definition: CapacityServiceService, implementation: requireAdminOnEvery(capacity.implementation, token) },
          { name: ServiceNames.scheduling, definition: SchedulingServiceService, implementation: requireAdminOnEvery(scheduling.implementation, token) },
          { name: ServiceNames.queues, definition: QueueServiceService, implementation: queues.implementation },
          { name: ServiceNames.deployments, definition: DeploymentServiceService, implementation: requireAdminOnEvery(deployments.implementation, token) },
          { name: ServiceNames.instances, definition: InstanceServiceService, implementation: requireAdminOnEvery(instances.implementation, token) },
          { name: ServiceNames.secrets, definition: SecretServiceService, implementation: requireAdminOnEvery(secrets.implementation, token) },
        ],
        protoFiles: ['gpufleet/v1/capacity.proto', 'gpufleet/v1/scheduling.proto', 'gpufleet/v1/deployments.proto', 'gpufleet/v1/instances.proto', 'gpufleet/v1/secrets.proto'],
      }),
      logger,
    );
  },
};
