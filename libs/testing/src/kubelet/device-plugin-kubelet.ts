// The kubelet's side of the device plugin API, for tests: a Registration server on kubelet.sock
// in a temporary device-plugins dir that, like the kubelet, dials each registered plugin's
// socket, asks GetDevicePluginOptions, keeps a ListAndWatch stream open and the latest device
// list. It leaves out what the kubelet does with the devices (pod admission, checkpoints,
// topology manager): tests call GetPreferredAllocation and Allocate themselves.
import { existsSync, mkdtempSync, readdirSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { DEVICE_PLUGIN_API_VERSION, KUBELET_SOCKET, deviceplugin } from '@gpufleet/contracts/kubelet';
import { waitFor } from '@gpufleet/process-kit';

/** An extended resource name as the kubelet validates it: a domain, '/', a qualified name. */
const RESOURCE_NAME = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

export interface RegisteredPlugin {
  readonly request: deviceplugin.RegisterRequest;
  /** GetDevicePluginOptions as the plugin answered it. */
  options?: deviceplugin.DevicePluginOptions;
  /** The latest ListAndWatch list; undefined until the first arrives. */
  devices?: deviceplugin.Device[];
  /** Lists received on the stream so far. */
  updates: number;
  /** The stream is open. */
  connected: boolean;
  readonly client: deviceplugin.DevicePluginClient;
}

export class DevicePluginKubelet {
  /** Every RegisterRequest received, in order, across restarts. */
  readonly registrations: deviceplugin.RegisterRequest[] = [];
  private readonly plugins = new Map<string, RegisteredPlugin>();
  private server: grpc.Server | undefined;
  private streams: grpc.ClientReadableStream<deviceplugin.ListAndWatchResponse>[] = [];

  private constructor(readonly dir: string) {}

  /** Serves kubelet.sock in `dir` (a new temporary directory by default). */
  static async start(dir = mkdtempSync(join(tmpdir(), 'gpufleet-kubelet-'))): Promise<DevicePluginKubelet> {
    const kubelet = new DevicePluginKubelet(dir);
    await kubelet.serve();
    return kubelet;
  }

  get socketPath(): string {
    return join(this.dir, KUBELET_SOCKET);
  }

  plugin(resource: string): RegisteredPlugin | undefined {
    return this.plugins.get(resource);
  }

  /** Waits until `resource` has a device list for which `accept` holds; returns that list. */
  async devices(resource: string, accept: (devices: deviceplugin.Device[]) => boolean = () => true, timeoutMs = 10_000): Promise<deviceplugin.Device[]> {
    return waitFor(`a device list of ${resource}`, () => {
      const devices = this.plugins.get(resource)?.devices;
      return devices && accept(devices) ? devices : undefined;
    }, { timeoutMs, intervalMs: 20 });
  }

  async preferredAllocation(resource: string, request: deviceplugin.ContainerPreferredAllocationRequest): Promise<string[]> {
    const res = await this.call<deviceplugin.PreferredAllocationResponse>(resource, (c, cb) => c.getPreferredAllocation({ containerRequests: [request] }, cb));
    return res.containerResponses[0].deviceIDs;
  }

  /** Allocate for one container per list of device ids. */
  async allocate(resource: string, ...containers: string[][]): Promise<deviceplugin.ContainerAllocateResponse[]> {
    const res = await this.call<deviceplugin.AllocateResponse>(resource, (c, cb) => c.allocate({ containerRequests: containers.map((devicesIds) => ({ devicesIds })) }, cb));
    return res.containerResponses;
  }

  /**
   * What the kubelet does when it restarts: its Registration server goes, every socket in the
   * device-plugins dir is deleted (the plugins' too), and kubelet.sock is created anew. Plugins
   * must register again; until they do, `plugin()` forgets them.
   */
  async restart(): Promise<void> {
    await this.close();
    for (const name of readdirSync(this.dir)) if (name.endsWith('.sock')) unlinkSync(join(this.dir, name));
    this.plugins.clear();
    await this.serve();
  }

  /** Stops serving and removes the directory. */
  async stop(): Promise<void> {
    await this.close();
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async serve(): Promise<void> {
    if (existsSync(this.socketPath)) unlinkSync(this.socketPath);
    const server = new grpc.Server();
    const implementation: deviceplugin.RegistrationServer = {
      register: (call, callback) => {
        const request = call.request;
        this.registrations.push(request);
        // The kubelet's own checks (pkg/kubelet/cm/devicemanager): a version it speaks, a valid extended resource name.
        if (request.version !== DEVICE_PLUGIN_API_VERSION) {
          callback({ code: grpc.status.UNKNOWN, details: `Requested device plugin version ${request.version} is not supported` });
          return;
        }
        if (!RESOURCE_NAME.test(request.resourceName)) {
          callback({ code: grpc.status.UNKNOWN, details: `invalid name of device plugin socket: ${request.resourceName}` });
          return;
        }
        callback(null, {});
        void this.connect(request);
      },
    };
    server.addService(deviceplugin.RegistrationService, implementation);
    await new Promise<void>((resolve, reject) => server.bindAsync(`unix:${this.socketPath}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())));
    this.server = server;
  }

  private async connect(request: deviceplugin.RegisterRequest): Promise<void> {
    this.plugins.get(request.resourceName)?.client.close();
    const client = new deviceplugin.DevicePluginClient(`unix:${join(this.dir, request.endpoint)}`, grpc.credentials.createInsecure());
    const plugin: RegisteredPlugin = { request, updates: 0, connected: false, client };
    this.plugins.set(request.resourceName, plugin);
    plugin.options = await new Promise<deviceplugin.DevicePluginOptions | undefined>((resolve) =>
      client.getDevicePluginOptions({}, (err, res) => resolve(err ? undefined : res)),
    );
    const stream = client.listAndWatch({});
    this.streams.push(stream);
    plugin.connected = true;
    stream.on('data', (res: deviceplugin.ListAndWatchResponse) => {
      plugin.devices = res.devices;
      plugin.updates++;
    });
    const down = () => (plugin.connected = false);
    stream.on('error', down);
    stream.on('end', down);
  }

  private call<T>(resource: string, invoke: (client: deviceplugin.DevicePluginClient, cb: (err: grpc.ServiceError | null, res: T) => void) => void): Promise<T> {
    const plugin = this.plugins.get(resource);
    if (!plugin) return Promise.reject(new Error(`no plugin registered ${resource}; registered: ${[...this.plugins.keys()].join(', ') || 'none'}`));
    return new Promise<T>((resolve, reject) => invoke(plugin.client, (err, res) => (err ? reject(err) : resolve(res))));
  }

  private async close(): Promise<void> {
    for (const stream of this.streams) stream.cancel();
    this.streams = [];
    for (const plugin of this.plugins.values()) plugin.client.close();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
    server?.forceShutdown();
  }
}
