import type { BeforeApplicationShutdown, OnApplicationBootstrap } from '@nestjs/common';
import { GrpcServer, GrpcServerOptions } from '@gpufleet/grpc-kit';
import type { Logger } from '@gpufleet/observability';
import { listenHost } from './listen';

export interface GrpcTlsConfig {
  GRPC_PORT: number;
  GRPC_TLS_CERT_FILE?: string;
  GRPC_TLS_KEY_FILE?: string;
  GRPC_TLS_CA_FILE?: string;
  /** Listening address, as for the ops server (DEFAULT_LISTEN_HOST when unset). */
  HOST?: string;
}

/** gRPC server options from the shared GRPC_* variables (and HOST where the service has one). */
export function grpcServerOptions(config: GrpcTlsConfig, rest: Pick<GrpcServerOptions, 'services' | 'protoFiles'>): GrpcServerOptions {
  return {
    host: listenHost(config),
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
 * Pass the injected LOGGER to have `gRPC listening on <port>` logged.
 */
export class GrpcLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown {
  readonly server: GrpcServer;

  constructor(
    options: GrpcServerOptions,
    private readonly logger?: Logger,
  ) {
    this.server = new GrpcServer(options);
  }

  async onApplicationBootstrap(): Promise<void> {
    const port = await this.server.start();
    this.server.setServing(true);
    this.logger?.info({ port }, `gRPC listening on ${port}`);
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.server.stop();
  }
}
