// Integration harness: a real nats-server (ephemeral) and one scheduler started in-process
// through startService, as main.ts does, with typed gRPC clients of its five services. Node
// records are written straight into the nodes bucket, which is the contract the agents fulfil.
import { credentials, Metadata, status } from '@grpc/grpc-js';
import { connect, type NatsConnection } from 'nats';
import {
  Buckets,
  CapacityServiceClient,
  DeploymentServiceClient,
  InstanceServiceClient,
  NodeInventory,
  QueueServiceClient,
  SchedulingServiceClient,
} from '@gpufleet/contracts';
import { callUnary } from '@gpufleet/grpc-kit';
import { KvStore } from '@gpufleet/messaging';
import { startService, type RunningService } from '@gpufleet/service-kit';
import { freePort, node, startNats, waitFor, type RunningServer } from '@gpufleet/testing';
import { loadConfig } from '@gpufleet/config';
import { AppModule } from '../app.module';
import { schedulerConfigSchema, type SchedulerConfig } from '../config';

function clientsOf(service: RunningService): SchedulerClients {
  const address = `127.0.0.1:${service.grpcPort}`;
  const insecure = credentials.createInsecure();
  return {
    capacity: new CapacityServiceClient(address, insecure),
    scheduling: new SchedulingServiceClient(address, insecure),
    queues: new QueueServiceClient(address, insecure),
    deployments: new DeploymentServiceClient(address, insecure),
    instances: new InstanceServiceClient(address, insecure),
  };
}

let clusterCount = 0;

export interface SchedulerClients {
  readonly capacity: InstanceType<typeof CapacityServiceClient>;
  readonly scheduling: InstanceType<typeof SchedulingServiceClient>;
  readonly queues: InstanceType<typeof QueueServiceClient>;
  readonly deployments: InstanceType<typeof DeploymentServiceClient>;
  readonly instances: InstanceType<typeof InstanceServiceClient>;
}

export class SchedulerHarness {
  private constructor(
    readonly cluster: string,
    readonly nats: RunningServer,
    readonly nc: NatsConnection,
    public service: RunningService,
    public clients: SchedulerClients,
    readonly adminToken: string,
    private readonly config: SchedulerConfig,
  ) {}

  /** NATS, `nodes` 8-GPU H100 node records, and a scheduler (admin token set) that has loaded them. */
  static async start(options: { nodes?: number; env?: Record<string, string> } = {}): Promise<SchedulerHarness> {
    const nats = await startNats();
    const nc = await connect({ servers: nats.url });
    const cluster = `sc${process.pid}x${++clusterCount}`;
    const nodes = await KvStore.open(nc.jetstream(), Buckets.nodes(cluster), NodeInventory);
    for (let i = 0; i < (options.nodes ?? 2); i++) await nodes.put(`gpu-${i}`, { ...node(`gpu-${i}`), cluster });
    const adminToken = 'validation-admin-token';
    const config = loadConfig(schedulerConfigSchema, {
      GPUFLEET_CLUSTER: cluster,
      NATS_URL: nats.url,
      HOST: '127.0.0.1',
      HTTP_PORT: String(await freePort()),
      GRPC_PORT: String(await freePort()),
      LOG_LEVEL: process.env.SCHEDULER_TEST_LOG_LEVEL ?? 'silent',
      GPUFLEET_ADMIN_TOKEN: adminToken,
      LEADER_RENEW_S: '0.2',
      LEADER_EXPIRE_S: '1',
      ...options.env,
    });
    const service = await startService({ service: 'scheduler', config, module: AppModule.forRoot(config) });
    const h = new SchedulerHarness(cluster, nats, nc, service, clientsOf(service), adminToken, config);
    await h.loaded();
    return h;
  }

  /** Stops the scheduler and starts a new one on the same NATS (and config), as a process restart would. */
  async restart(): Promise<void> {
    for (const client of Object.values(this.clients)) client.close();
    await this.service.close();
    this.service = await startService({ service: 'scheduler', config: this.config, module: AppModule.forRoot(this.config) });
    this.clients = clientsOf(this.service);
    await this.loaded();
  }

  private async loaded(): Promise<void> {
    const clients = this.clients;
    const admin = this.admin();
    // Ready once the node records are in the capacity views and a default ClusterQueue exists.
    await waitFor(
      'the scheduler to load its node records and default queues',
      async () => {
        const pools = await callUnary(clients.capacity, clients.capacity.listPools, { pageSize: 0, pageToken: '' }, { metadata: admin }).catch(() => undefined);
        if (!pools?.pools.length) return undefined;
        const queues = await callUnary(clients.queues, clients.queues.listClusterQueues, { pageSize: 0, pageToken: '' }, { metadata: admin }).catch(() => undefined);
        return queues?.clusterQueues.length ? true : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 50 },
    );
  }

  admin(): Metadata {
    const metadata = new Metadata();
    metadata.set('authorization', `Bearer ${this.adminToken}`);
    return metadata;
  }

  async stop(): Promise<void> {
    for (const client of Object.values(this.clients)) client.close();
    await this.service.close();
    await this.nc.close();
    await this.nats.dispose();
  }
}

/** Status codes that bad input may get: anything else (INTERNAL, UNKNOWN, a lost connection) is a bug. */
export const CLIENT_ERRORS: ReadonlySet<status> = new Set([
  status.INVALID_ARGUMENT,
  status.NOT_FOUND,
  status.ALREADY_EXISTS,
  status.FAILED_PRECONDITION,
  status.OUT_OF_RANGE,
  status.RESOURCE_EXHAUSTED,
]);
