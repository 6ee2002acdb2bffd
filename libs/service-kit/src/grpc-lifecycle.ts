import { BeforeApplicationShutdown, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { GrpcServer, GrpcServerOptions } from '@gpufleet/grpc-kit';

export interface GrpcTlsConfig {
  GRPC_PORT: number;
  GRPC_TLS_CERT_FILE?: string;
  GRPC_TLS_KEY_FILE?: string;
  GRPC_TLS_CA_FILE?: string;
}

/** gRPC server options from the shared GRPC_* variables. */
export function grpcServerOptions(config: GrpcTlsConfig, rest: Pick<GrpcServerOptions, 'services' | 'protoFiles'>): GrpcServerOptions {
  return {
    port: config.GRPC_PORT,
    tls:
      config.GRPC_TLS_CERT_FILE && config.GRPC_TLS_KEY_FILE
        ? { certFile: config.GRPC_TLS_CERT_FILE, keyFile: config.GRPC_TLS_KEY_FILE, caFile: config.GRPC_TLS_CA_FILE }
        : undefined,
    ...rest,
  };
}

/**
 * Ties a GrpcServer to the Nest lifecycle: it listens once every module is initialised (so
 * health turns SERVING only when the service can answer) and stops before shutdown hooks run.
 */
export class GrpcLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('grpc');
  readonly server: GrpcServer;

  constructor(options: GrpcServerOptions) {
    this.server = new GrpcServer(options);
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
