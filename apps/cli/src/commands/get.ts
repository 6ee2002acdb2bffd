import {
  CapacityServiceClient,
  ClusterQueue,
  DeploymentServiceClient,
  GPUInstance,
  InstanceServiceClient,
  InstanceType,
  LocalQueue,
  ModelDeployment,
  Node,
  Pool,
  QueueServiceClient,
  SchedulingServiceClient,
  SecretMetadata,
  SecretServiceClient,
  WatchEventType,
  Workload,
  workloadKey,
  WorkloadPhase,
} from '@gpufleet/contracts';
import { callUnary } from '@gpufleet/grpc-kit';
import { Column, OutputFormat, renderStructured, renderTable } from '../output/format';
import { instanceTypeColumns, nodeColumns, poolColumns } from '../output/resources';
import { clusterQueueColumns, localQueueColumns, workloadColumns } from '../output/workloads';
import { deploymentColumns } from '../output/deployments';
import { instanceColumns } from '../output/instances';
import { secretColumns } from '../output/secrets';
import { adminMetadata, cliChannelCredentials, cliClientOptions } from '../admin';

export type Kind = 'nodes' | 'pools' | 'instancetypes' | 'workloads' | 'clusterqueues' | 'localqueues' | 'deployments' | 'instances' | 'secrets';

const ALIASES: Record<string, Kind> = {
  node: 'nodes', nodes: 'nodes', no: 'nodes',
  pool: 'pools', pools: 'pools',
  instancetype: 'instancetypes', instancetypes: 'instancetypes', it: 'instancetypes', its: 'instancetypes',
  workload: 'workloads', workloads: 'workloads', wl: 'workloads',
  clusterqueue: 'clusterqueues', clusterqueues: 'clusterqueues', cq: 'clusterqueues', queues: 'clusterqueues', queue: 'clusterqueues',
  localqueue: 'localqueues', localqueues: 'localqueues', lq: 'localqueues',
  deployment: 'deployments', deployments: 'deployments', deploy: 'deployments',
  modeldeployment: 'deployments', modeldeployments: 'deployments',
  instance: 'instances', instances: 'instances', gpuinstance: 'instances', gpuinstances: 'instances',
  secret: 'secrets', secrets: 'secrets',
};

export function parseKind(value: string): Kind {
  const kind = ALIASES[value.toLowerCase()];
  if (!kind) {
    throw new Error(`unknown resource "${value}": expected one of nodes, pools, instancetypes, workloads, queues (clusterqueues), localqueues, deployments, instances, secrets`);
  }
  return kind;
}

/** The scheduler's gRPC services, on one address. */
/** Items per page the CLI asks for: every response stays far below gRPC's message limits. */
const CLI_PAGE_SIZE = 500;

/** Every page of a paged List*, in order. */
async function allPages<T>(fetchPage: (pageToken: string) => Promise<{ items: T[]; next: string }>): Promise<T[]> {
  const all: T[] = [];
  let token = '';
  do {
    const { items, next } = await fetchPage(token);
    all.push(...items);
    token = next;
  } while (token !== '');
  return all;
}

export interface Clients {
  capacity: CapacityServiceClient;
  scheduling: SchedulingServiceClient;
  queues: QueueServiceClient;
  deployments: DeploymentServiceClient;
  instances: InstanceServiceClient;
  secrets: SecretServiceClient;
  namespace?: string;
}

export function connectClients(address: string, namespace?: string): Clients & { close(): void } {
  const creds = cliChannelCredentials();
  const clients = {
    capacity: new CapacityServiceClient(address, creds, cliClientOptions()),
    scheduling: new SchedulingServiceClient(address, creds, cliClientOptions()),
    queues: new QueueServiceClient(address, creds, cliClientOptions()),
    deployments: new DeploymentServiceClient(address, creds, cliClientOptions()),
    instances: new InstanceServiceClient(address, creds, cliClientOptions()),
    secrets: new SecretServiceClient(address, creds, cliClientOptions()),
    namespace,
  };
  const all = [clients.capacity, clients.scheduling, clients.queues, clients.deployments, clients.instances, clients.secrets];
  return { ...clients, close: () => all.forEach((c) => c.close()) };
}

export interface GetOptions {
  scheduler: string;
  kind: Kind;
  name?: string;
  format: OutputFormat;
  watch: boolean;
  pool?: string;
  namespace?: string;
  out?: (text: string) => void;
}

interface KindSpec<T> {
  columns: Column<T>[];
  toJSON: (item: T) => unknown;
  list: (c: Clients, pool?: string) => Promise<T[]>;
  get: (c: Clients, name: string) => Promise<T>;
  key?: (item: T) => string;
}

const nodesSpec: KindSpec<Node> = {
    columns: nodeColumns,
    toJSON: (n) => Node.toJSON(n),
    list: ({ capacity: c }, pool) => allPages(async (pageToken) => {
      const res = await callUnary(c, c.listNodes, { pool: pool ?? '', labelSelector: {}, pageSize: CLI_PAGE_SIZE, pageToken });
      return { items: res.nodes, next: res.nextPageToken };
    }),
    get: async ({ capacity: c }, name) => (await callUnary(c, c.getNode, { name })).node!,
};

const poolsSpec: KindSpec<Pool> = {
    columns: poolColumns,
    toJSON: (p) => Pool.toJSON(p),
    list: ({ capacity: c }) => allPages(async (pageToken) => {
      const res = await callUnary(c, c.listPools, { pageSize: CLI_PAGE_SIZE, pageToken });
      return { items: res.pools, next: res.nextPageToken };
    }),
    get: async (clients, name) => {
      const pool = (await poolsSpec.list(clients)).find((p) => p.name === name);
      if (!pool) throw new Error(`NOT_FOUND: pool "${name}" does not exist`);
      return pool;
    },
};

const instanceTypesSpec: KindSpec<InstanceType> = {
    columns: instanceTypeColumns,
    toJSON: (t) => InstanceType.toJSON(t),
    list: ({ capacity: c }, pool) => allPages(async (pageToken) => {
      const res = await callUnary(c, c.listInstanceTypes, { pool: pool ?? '', pageSize: CLI_PAGE_SIZE, pageToken });
      return { items: res.instanceTypes, next: res.nextPageToken };
    }),
    get: async ({ capacity: c }, name) => (await callUnary(c, c.getInstanceType, { name })).instanceType!,
};

const workloadsSpec: KindSpec<Workload> = {
  columns: workloadColumns,
  toJSON: (w) => Workload.toJSON(w),
  key: (w) => workloadKey(w.spec?.namespace ?? '', w.spec?.name ?? ''),
  list: async ({ scheduling: c, namespace }) =>
    allPages(async (pageToken) => {
      const res = await callUnary(c, c.listWorkloads, { namespace: namespace ?? '', phase: WorkloadPhase.WORKLOAD_PHASE_UNSPECIFIED, clusterQueue: '', pageSize: CLI_PAGE_SIZE, pageToken });
      return { items: res.workloads, next: res.nextPageToken };
    }),
  get: async ({ scheduling: c, namespace }, name) => (await callUnary(c, c.getWorkload, { namespace: namespace ?? 'default', name })).workload!,
};

const clusterQueuesSpec: KindSpec<ClusterQueue> = {
  columns: clusterQueueColumns,
  toJSON: (q) => ClusterQueue.toJSON(q),
  list: ({ queues: c }) =>
    allPages(async (pageToken) => {
      const res = await callUnary(c, c.listClusterQueues, { pageSize: CLI_PAGE_SIZE, pageToken }, { metadata: adminMetadata() });
      return { items: res.clusterQueues, next: res.nextPageToken };
    }),
  get: async ({ queues: c }, name) => (await callUnary(c, c.getClusterQueue, { name }, { metadata: adminMetadata() })).clusterQueue!,
};

const localQueuesSpec: KindSpec<LocalQueue> = {
  columns: localQueueColumns,
  toJSON: (q) => LocalQueue.toJSON(q),
  key: (q) => workloadKey(q.namespace, q.name),
  list: ({ queues: c, namespace }) =>
    allPages(async (pageToken) => {
      const res = await callUnary(c, c.listLocalQueues, { namespace: namespace ?? '', pageSize: CLI_PAGE_SIZE, pageToken }, { metadata: adminMetadata() });
      return { items: res.localQueues, next: res.nextPageToken };
    }),
  get: async (clients, name) => {
    const q = (await localQueuesSpec.list(clients)).find((x) => x.name === name);
    if (!q) throw new Error(`NOT_FOUND: LocalQueue "${name}" does not exist in namespace "${clients.namespace ?? 'any'}"`);
    return q;
  },
};

const deploymentsSpec: KindSpec<ModelDeployment> = {
  columns: deploymentColumns,
  toJSON: (d) => ModelDeployment.toJSON(d),
  key: (d) => workloadKey(d.spec?.namespace ?? '', d.spec?.name ?? ''),
  list: ({ deployments: c, namespace }) =>
    allPages(async (pageToken) => {
      const res = await callUnary(c, c.listDeployments, { namespace: namespace ?? '', pageSize: CLI_PAGE_SIZE, pageToken });
      return { items: res.deployments, next: res.nextPageToken };
    }),
  get: async ({ deployments: c, namespace }, name) => (await callUnary(c, c.getDeployment, { namespace: namespace ?? 'default', name })).deployment!,
};

const instancesSpec: KindSpec<GPUInstance> = {
  columns: instanceColumns,
  toJSON: (i) => GPUInstance.toJSON(i),
  key: (i) => workloadKey(i.spec?.namespace ?? '', i.spec?.name ?? ''),
  list: ({ instances: c, namespace }) =>
    allPages(async (pageToken) => {
      const res = await callUnary(c, c.listInstances, { namespace: namespace ?? '', pageSize: CLI_PAGE_SIZE, pageToken });
      return { items: res.instances, next: res.nextPageToken };
    }),
  get: async ({ instances: c, namespace }, name) => (await callUnary(c, c.getInstance, { namespace: namespace ?? 'default', name })).instance!,
};

const secretsSpec: KindSpec<SecretMetadata> = {
  columns: secretColumns,
  toJSON: (s) => SecretMetadata.toJSON(s),
  key: (s) => workloadKey(s.namespace, s.name),
  list: ({ secrets: c, namespace }) =>
    allPages(async (pageToken) => {
      const res = await callUnary(c, c.listSecrets, { namespace: namespace ?? '', pageSize: CLI_PAGE_SIZE, pageToken });
      return { items: res.secrets, next: res.nextPageToken };
    }),
  get: async ({ secrets: c, namespace }, name) => (await callUnary(c, c.getSecret, { namespace: namespace ?? 'default', name })).secret!,
};

const specs = {
  nodes: nodesSpec,
  pools: poolsSpec,
  instancetypes: instanceTypesSpec,
  workloads: workloadsSpec,
  clusterqueues: clusterQueuesSpec,
  localqueues: localQueuesSpec,
  deployments: deploymentsSpec,
  instances: instancesSpec,
  secrets: secretsSpec,
} as Record<Kind, KindSpec<unknown>>;

function render<T>(spec: KindSpec<T>, items: T[], format: OutputFormat, single: boolean, header = true): string {
  if (format === 'json' || format === 'yaml') return renderStructured(items.map(spec.toJSON), format, single);
  return renderTable(items, spec.columns, format === 'wide', header);
}

/** `gpufleet get`: prints once, or with -w keeps printing changed rows until interrupted. */
export async function runGet(opts: GetOptions): Promise<void> {
  const out = opts.out ?? ((t: string) => process.stdout.write(t + '\n'));
  const clients = connectClients(opts.scheduler, opts.namespace);
  try {
    const spec = specs[opts.kind];
    const items = opts.name ? [await spec.get(clients, opts.name)] : await spec.list(clients, opts.pool);
    if (items.length === 0 && (opts.format === 'table' || opts.format === 'wide')) out(`No ${opts.kind} found.`);
    else out(render(spec, items, opts.format, Boolean(opts.name)));
    if (opts.watch) await watch(clients, opts, spec, out);
  } finally {
    clients.close();
  }
}

async function watch(clients: Clients, opts: GetOptions, spec: KindSpec<unknown>, out: (t: string) => void): Promise<void> {
  const structured = opts.format === 'json' || opts.format === 'yaml';
  if (opts.kind === 'instancetypes') {
    const stream = clients.capacity.watchInstanceTypes({ pool: opts.pool ?? '', initial: false });
    await new Promise<void>((resolve, reject) => {
      process.once('SIGINT', () => {
        stream.cancel();
        resolve();
      });
      stream.on('data', (ev: { type: WatchEventType; instanceType?: InstanceType }) => {
        const t = ev.instanceType;
        if (!t || (opts.name && t.name !== opts.name)) return;
        if (structured) out(render(spec, [t], opts.format, true));
        else out(`${render(spec, [t], opts.format, true, false)}${ev.type === WatchEventType.WATCH_EVENT_TYPE_DELETED ? '   (deleted)' : ''}`);
      });
      stream.on('error', (err: Error & { code?: number }) => (err.code === 1 ? resolve() : reject(err)));
      stream.on('end', resolve);
    });
    return;
  }
  // Other kinds: re-read every second and print only the rows whose content changed.
  const last = new Map<string, string>();
  const key = spec.key ?? ((x: unknown) => (x as { name: string }).name);
  const initial = opts.name ? [await spec.get(clients, opts.name)] : await spec.list(clients, opts.pool);
  for (const i of initial) last.set(key(i), JSON.stringify(spec.toJSON(i)));
  let stopped = false;
  process.once('SIGINT', () => (stopped = true));
  while (!stopped) {
    await new Promise((r) => setTimeout(r, 1000));
    const items = opts.name ? [await spec.get(clients, opts.name)] : await spec.list(clients, opts.pool);
    for (const i of items) {
      const json = JSON.stringify(spec.toJSON(i));
      if (last.get(key(i)) === json) continue;
      last.set(key(i), json);
      out(render(spec, [i], opts.format, true, structured));
    }
  }
}
