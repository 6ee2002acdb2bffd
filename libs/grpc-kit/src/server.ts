import { readFileSync } from 'fs';
import { join } from 'path';
import {
  Server,
  ServerCredentials,
  ServiceDefinition,
  UntypedServiceImplementation,
  handleServerStreamingCall,
  handleUnaryCall,
  sendUnaryData,
  ServerUnaryCall,
  ServerWritableStream,
} from '@grpc/grpc-js';
import type { HealthImplementation } from 'grpc-health-check';
import { PROTO_ROOT } from '@gpufleet/contracts';
import { toServiceError } from './errors';
import { addLazyServices, type LazyMethod } from './lazy-services';

export interface GrpcTlsSettings {
  certFile: string;
  keyFile: string;
  /** When set, clients must present a certificate signed by this CA (mutual TLS). */
  caFile?: string;
}

export interface RegisteredService {
  /** Fully-qualified name, e.g. "gpufleet.v1.CapacityService" (health and reflection use it). */
  name: string;
  definition: ServiceDefinition;
  implementation: UntypedServiceImplementation;
}

export interface GrpcServerOptions {
  host?: string;
  port: number;
  tls?: GrpcTlsSettings;
  services: RegisteredService[];
  /** .proto files (relative to proto/) to serve through reflection. */
  protoFiles: string[];
}

/** Async handler signatures: return (or throw) instead of calling back. */
export type UnaryHandler<Req, Res> = (request: Req, call: ServerUnaryCall<Req, Res>) => Promise<Res> | Res;
export type StreamHandler<Req, Res> = (request: Req, call: ServerWritableStream<Req, Res>) => Promise<void> | void;

export function unary<Req, Res>(handler: UnaryHandler<Req, Res>): handleUnaryCall<Req, Res> {
  return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => {
    Promise.resolve()
      .then(() => handler(call.request, call))
      .then((res) => callback(null, res))
      .catch((err: unknown) => callback(toServiceError(err)));
  };
}

export function serverStream<Req, Res>(handler: StreamHandler<Req, Res>): handleServerStreamingCall<Req, Res> {
  return (call: ServerWritableStream<Req, Res>) => {
    Promise.resolve()
      .then(() => handler(call.request, call))
      // Emitting 'error' makes grpc-js send the status and end the stream; destroy() would not.
      .catch((err: unknown) => call.emit('error', toServiceError(err)));
  };
}

type ServingStatus = 'SERVING' | 'NOT_SERVING';

/** grpc.health.v1 as grpc-health-check serves it. */
const HEALTH_METHODS: LazyMethod[] = [
  { service: 'grpc.health.v1.Health', method: 'Check', requestStream: false, responseStream: false },
  { service: 'grpc.health.v1.Health', method: 'Watch', requestStream: false, responseStream: true },
  { service: 'grpc.health.v1.Health', method: 'List', requestStream: false, responseStream: false },
];

/** Server reflection v1 and v1alpha as @grpc/reflection serves it. */
const REFLECTION_METHODS: LazyMethod[] = ['grpc.reflection.v1.ServerReflection', 'grpc.reflection.v1alpha.ServerReflection'].map((service) => ({
  service,
  method: 'ServerReflectionInfo',
  requestStream: true,
  responseStream: true,
}));

/**
 * A grpc-js server with the standard health service (grpc.health.v1) and server reflection,
 * both loaded on their first call (lazy-services.ts). Services are registered from the ts-proto
 * generated definitions, so messages are encoded by the generated codecs (Timestamps as Dates,
 * int64 as numbers) rather than a runtime loader.
 */
export class GrpcServer {
  private readonly server = new Server({ 'grpc.max_receive_message_length': 16 * 1024 * 1024 });
  /** Health by service name ('' is the whole server), kept here until the health service loads. */
  private readonly statuses = new Map<string, ServingStatus>([['', 'NOT_SERVING']]);
  private health: HealthImplementation | undefined;
  private boundPort = 0;

  constructor(private readonly options: GrpcServerOptions) {
    for (const svc of options.services) {
      this.server.addService(svc.definition, svc.implementation);
      this.statuses.set(svc.name, 'NOT_SERVING');
    }
    addLazyServices(this.server, HEALTH_METHODS, (registry) => {
      const { HealthImplementation } = require('grpc-health-check') as typeof import('grpc-health-check');
      this.health = new HealthImplementation(Object.fromEntries(this.statuses));
      this.health.addToServer(registry as Server);
    });
    addLazyServices(this.server, REFLECTION_METHODS, (registry) => {
      const { loadSync } = require('@grpc/proto-loader') as typeof import('@grpc/proto-loader');
      const { ReflectionService } = require('@grpc/reflection') as typeof import('@grpc/reflection');
      const pkg = loadSync(
        options.protoFiles.map((f) => join(PROTO_ROOT, f)),
        { includeDirs: [PROTO_ROOT], keepCase: false, longs: Number, enums: String, defaults: true, oneofs: true },
      );
      new ReflectionService(pkg).addToServer(registry as Server);
    });
  }

  get port(): number {
    return this.boundPort;
  }

  async start(): Promise<number> {
    const creds = this.options.tls
      ? ServerCredentials.createSsl(
          this.options.tls.caFile ? readFileSync(this.options.tls.caFile) : null,
          [{ cert_chain: readFileSync(this.options.tls.certFile), private_key: readFileSync(this.options.tls.keyFile) }],
          Boolean(this.options.tls.caFile),
        )
      : ServerCredentials.createInsecure();
    const address = `${this.options.host ?? '0.0.0.0'}:${this.options.port}`;
    this.boundPort = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync(address, creds, (err, port) => (err ? reject(new Error(`gRPC could not bind ${address}: ${err.message}`)) : resolve(port))),
    );
    return this.boundPort;
  }

  setServing(serving: boolean): void {
    const status: ServingStatus = serving ? 'SERVING' : 'NOT_SERVING';
    for (const name of this.statuses.keys()) {
      this.statuses.set(name, status);
      this.health?.setStatus(name, status);
    }
  }

  /** Stops taking new calls, lets running ones finish for up to `graceMs`, then cancels the rest. */
  async stop(graceMs = 5_000): Promise<void> {
    this.setServing(false);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, graceMs);
      this.server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}
