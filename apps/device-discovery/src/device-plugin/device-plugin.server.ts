import { existsSync, unlinkSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { deviceplugin } from '@gpufleet/contracts/kubelet';
import { DevicePluginError, type DevicePluginState } from '@gpufleet/device-plugin-core';
import type { Logger } from '@gpufleet/observability';

/** gRPC status of each refusal reason. */
const STATUS: Record<DevicePluginError['reason'], grpc.status> = {
  UNKNOWN_DEVICE: grpc.status.NOT_FOUND,
  UNKNOWN_RESOURCE: grpc.status.NOT_FOUND,
  INVALID_ARGUMENT: grpc.status.INVALID_ARGUMENT,
};

function toServiceError(err: unknown): Partial<grpc.ServiceError> {
  if (err instanceof DevicePluginError) return { code: STATUS[err.reason], details: err.message, message: err.message };
  const message = err instanceof Error ? err.message : String(err);
  return { code: grpc.status.INTERNAL, details: message, message };
}

function unary<Req, Res>(handle: (request: Req) => Res): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    try {
      callback(null, handle(call.request));
    } catch (err) {
      callback(toServiceError(err));
    }
  };
}

/**
 * The device plugin of one resource, on its own unix socket in the kubelet's device-plugins
 * directory. The answers come from the node's DevicePluginState; this class only carries them.
 */
export class DevicePluginServer {
  private server: grpc.Server | undefined;
  private readonly streams = new Set<grpc.ServerWritableStream<deviceplugin.Empty, deviceplugin.ListAndWatchResponse>>();

  constructor(
    readonly resource: string,
    readonly socketPath: string,
    private readonly state: DevicePluginState,
    private readonly logger: Logger,
  ) {}

  get listening(): boolean {
    return this.server !== undefined;
  }

  /** Binds the socket, replacing a stale file of a previous run. */
  async start(): Promise<void> {
    if (this.server) return;
    if (existsSync(this.socketPath)) unlinkSync(this.socketPath);
    const server = new grpc.Server();
    server.addService(deviceplugin.DevicePluginService, this.implementation());
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix:${this.socketPath}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
    );
    this.server = server;
  }

  /** Sends the current device list to every ListAndWatch stream (a health or device change). */
  notify(): void {
    if (this.streams.size === 0) return;
    let devices: deviceplugin.Device[];
    try {
      devices = this.state.devices(this.resource);
    } catch {
      return;
    }
    for (const stream of this.streams) stream.write({ devices });
  }

  /** Ends the streams, closes the server and removes the socket. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const stream of this.streams) stream.end();
    this.streams.clear();
    if (server) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 1000);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    if (existsSync(this.socketPath)) unlinkSync(this.socketPath);
  }

  private implementation(): deviceplugin.DevicePluginServer {
    return {
      getDevicePluginOptions: unary(() => ({ preStartRequired: false, getPreferredAllocationAvailable: true })),
      listAndWatch: (call) => {
        this.streams.add(call);
        const forget = () => this.streams.delete(call);
        call.on('cancelled', forget);
        call.on('close', forget);
        call.on('error', forget);
        try {
          call.write({ devices: this.state.devices(this.resource) });
        } catch (err) {
          this.logger.warn({ resource: this.resource, err }, `ListAndWatch of ${this.resource} could not list devices: ${(err as Error).message}`);
        }
      },
      getPreferredAllocation: unary((request) => ({
        containerResponses: request.containerRequests.map((c) => ({
          deviceIDs: this.state.preferred(this.resource, {
            availableDeviceIDs: c.availableDeviceIDs,
            mustIncludeDeviceIDs: c.mustIncludeDeviceIDs,
            allocationSize: c.allocationSize,
          }),
        })),
      })),
      allocate: unary((request) => {
        const containerResponses = request.containerRequests.map((c) => this.state.allocate(this.resource, c.devicesIds));
        this.logger.info(
          { resource: this.resource, devices: request.containerRequests.map((c) => c.devicesIds) },
          `allocated ${this.resource}: ${request.containerRequests.map((c) => c.devicesIds.join(',')).join('; ')}`,
        );
        return { containerResponses };
      }),
      preStartContainer: unary(() => ({})),
    };
  }
}
