import { Provider } from '@nestjs/common';
import { CapacityServiceService, ServiceNames } from '@gpufleet/contracts';
import { GrpcLifecycle, grpcServerOptions } from '@gpufleet/service-kit';
import { CapacityGrpc } from './capacity/capacity.grpc';
import { SCHEDULER_CONFIG, SchedulerConfig } from './config';

/** The scheduler's gRPC endpoint: CapacityService plus health and reflection. */
export const schedulerGrpcServer: Provider = {
  provide: GrpcLifecycle,
  inject: [SCHEDULER_CONFIG, CapacityGrpc],
  useFactory: (config: SchedulerConfig, capacity: CapacityGrpc) =>
    new GrpcLifecycle(
      grpcServerOptions(config, {
        services: [{ name: ServiceNames.capacity, definition: CapacityServiceService, implementation: capacity.implementation }],
        protoFiles: ['gpufleet/v1/capacity.proto'],
      }),
    ),
};
