import { Provider } from '@nestjs/common';
import { AccessServiceService, CapacityServiceService, DeploymentServiceService, InstanceServiceService, QueueServiceService, SchedulingServiceService, SecretServiceService, ServiceNames } from '@gpufleet/contracts';
import { LOGGER, type Logger } from '@gpufleet/observability';
import { authorizeEvery } from '@gpufleet/grpc-kit';
import { GrpcLifecycle, grpcServerOptions } from '@gpufleet/service-kit';
import { CapacityGrpc } from './capacity/capacity.grpc';
import { SCHEDULER_CONFIG, SchedulerConfig } from './config';
import { AccessGrpc } from './access/access.grpc';
import { AccessStore } from './access/access-store.service';
import { ACCESS_RULES, CAPACITY_RULES, DEPLOYMENT_RULES, INSTANCE_RULES, QUEUE_RULES, SCHEDULING_RULES, SECRET_RULES } from './access/access-rules';
import { QueuesGrpc } from './scheduling/queues.grpc';
import { SchedulingGrpc } from './scheduling/scheduling.grpc';
import { DeploymentsGrpc } from './scheduling/deployments.grpc';
import { InstancesGrpc } from './scheduling/instances.grpc';
import { SecretsGrpc } from './secrets/secrets.grpc';

/** The scheduler's gRPC endpoint: Capacity, Scheduling, Queue, Deployment, Instance, Access and SecretService, health, reflection. */
export const schedulerGrpcServer: Provider = {
  provide: GrpcLifecycle,
  inject: [SCHEDULER_CONFIG, LOGGER, AccessStore, AccessGrpc, CapacityGrpc, SchedulingGrpc, QueuesGrpc, DeploymentsGrpc, InstancesGrpc, SecretsGrpc],
  useFactory: (
    config: SchedulerConfig,
    logger: Logger,
    store: AccessStore,
    access: AccessGrpc,
    capacity: CapacityGrpc,
    scheduling: SchedulingGrpc,
    queues: QueuesGrpc,
    deployments: DeploymentsGrpc,
    instances: InstancesGrpc,
    secrets: SecretsGrpc,
  ) => {
    // With GPUFLEET_ADMIN_TOKEN set, every method and watch authenticates its caller and checks
    // its role (access/access-rules.ts); without it the stack is open (`up --no-auth`).
    const d = store.directory;
    return new GrpcLifecycle(
      grpcServerOptions(config, {
        services: [
          { name: ServiceNames.capacity, definition: CapacityServiceService, implementation: authorizeEvery(capacity.implementation, CAPACITY_RULES, d) },
          { name: ServiceNames.scheduling, definition: SchedulingServiceService, implementation: authorizeEvery(scheduling.implementation, SCHEDULING_RULES, d) },
          { name: ServiceNames.queues, definition: QueueServiceService, implementation: authorizeEvery(queues.implementation, QUEUE_RULES, d) },
          { name: ServiceNames.deployments, definition: DeploymentServiceService, implementation: authorizeEvery(deployments.implementation, DEPLOYMENT_RULES, d) },
          { name: ServiceNames.instances, definition: InstanceServiceService, implementation: authorizeEvery(instances.implementation, INSTANCE_RULES, d) },
          { name: ServiceNames.access, definition: AccessServiceService, implementation: authorizeEvery(access.implementation, ACCESS_RULES, d) },
          { name: ServiceNames.secrets, definition: SecretServiceService, implementation: authorizeEvery(secrets.implementation, SECRET_RULES, d) },
        ],
        protoFiles: ['gpufleet/v1/access.proto', 'gpufleet/v1/capacity.proto', 'gpufleet/v1/scheduling.proto', 'gpufleet/v1/deployments.proto', 'gpufleet/v1/instances.proto', 'gpufleet/v1/secrets.proto'],
      }),
      logger,
    );
  },
};
