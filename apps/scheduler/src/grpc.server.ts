import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { CapacityServiceService } from '@gpufleet/contracts';
import { GrpcServer } from '@gpufleet/grpc-kit';
import { CapacityGrpc } from './capacity/capacity.grpc';
import { SCHEDULER_CONFIG, SchedulerConfig } from './config';

/** The scheduler's gRPC endpoint: CapacityService plus health and reflection. */
@Injectable()
export class SchedulerGrpcServer implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('grpc');
  private readonly server: GrpcServer;

  constructor(@Inject(SCHEDULER_CONFIG) config: SchedulerConfig, capacity: CapacityGrpc) {
    this.server = new GrpcServer({
      port: config.GRPC_PORT,
      tls: config.GRPC_TLS_CERT_FILE && config.GRPC_TLS_KEY_FILE
        ? { certFile: config.GRPC_TLS_CERT_FILE, keyFile: config.GRPC_TLS_KEY_FILE, caFile: config.GRPC_TLS_CA_FILE }
        : undefined,
      services: [{ name: 'gpufleet.v1.CapacityService', definition: CapacityServiceService, implementation: capacity.implementation }],
      protoFiles: ['gpufleet/v1/capacity.proto'],
    });
  }

  async onApplicationBootstrap(): Promise<void> {
    const port = await this.server.start();
    this.server.setServing(true);
    this.logger.log(`gRPC listening on ${port}`);
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.server.stop();
  }
}
