import { CapacityServiceClient, InstanceType, Node, Pool, WatchEventType } from '@gpufleet/contracts';
import { callUnary, channelCredentials } from '@gpufleet/grpc-kit';
import { Column, OutputFormat, renderStructured, renderTable } from '../output/format';
import { instanceTypeColumns, nodeColumns, poolColumns } from '../output/resources';

export type Kind = 'nodes' | 'pools' | 'instancetypes';

const ALIASES: Record<string, Kind> = {
  node: 'nodes', nodes: 'nodes', no: 'nodes',
  pool: 'pools', pools: 'pools',
  instancetype: 'instancetypes', instancetypes: 'instancetypes', it: 'instancetypes', its: 'instancetypes',
};

export function parseKind(value: string): Kind {
  const kind = ALIASES[value.toLowerCase()];
  if (!kind) throw new Error(`unknown resource "${value}": expected one of nodes, pools, instancetypes`);
  return kind;
}

export interface GetOptions {
  scheduler: string;
  kind: Kind;
  name?: string;
  format: OutputFormat;
  watch: boolean;
  pool?: string;
  out?: (text: string) => void;
}

interface KindSpec<T> {
  columns: Column<T>[];
  toJSON: (item: T) => unknown;
  list: (client: CapacityServiceClient, pool?: string) => Promise<T[]>;
  get: (client: CapacityServiceClient, name: string) => Promise<T>;
}

const nodesSpec: KindSpec<Node> = {
    columns: nodeColumns,
    toJSON: (n) => Node.toJSON(n),
    list: async (c, pool) => (await callUnary(c, c.listNodes, { pool: pool ?? '', labelSelector: {} })).nodes,
    get: async (c, name) => (await callUnary(c, c.getNode, { name })).node!,
};

const poolsSpec: KindSpec<Pool> = {
    columns: poolColumns,
    toJSON: (p) => Pool.toJSON(p),
    list: async (c) => (await callUnary(c, c.listPools, {})).pools,
    get: async (c, name) => {
      const pool = (await callUnary(c, c.listPools, {})).pools.find((p) => p.name === name);
      if (!pool) throw new Error(`NOT_FOUND: pool "${name}" does not exist`);
      return pool;
    },
};

const instanceTypesSpec: KindSpec<InstanceType> = {
    columns: instanceTypeColumns,
    toJSON: (t) => InstanceType.toJSON(t),
    list: async (c, pool) => (await callUnary(c, c.listInstanceTypes, { pool: pool ?? '' })).instanceTypes,
    get: async (c, name) => (await callUnary(c, c.getInstanceType, { name })).instanceType!,
};

const specs = { nodes: nodesSpec, pools: poolsSpec, instancetypes: instanceTypesSpec } as Record<Kind, KindSpec<unknown>>;

function render<T>(spec: KindSpec<T>, items: T[], format: OutputFormat, single: boolean, header = true): string {
  if (format === 'json' || format === 'yaml') return renderStructured(items.map(spec.toJSON), format, single);
  return renderTable(items, spec.columns, format === 'wide', header);
}

/** `gpufleet get`: prints once, or with -w keeps printing changed rows until interrupted. */
export async function runGet(opts: GetOptions): Promise<void> {
  const out = opts.out ?? ((t: string) => process.stdout.write(t + '\n'));
  const client = new CapacityServiceClient(opts.scheduler, channelCredentials());
  try {
    const spec = specs[opts.kind];
    const items = opts.name ? [await spec.get(client, opts.name)] : await spec.list(client, opts.pool);
    if (items.length === 0 && (opts.format === 'table' || opts.format === 'wide')) out(`No ${opts.kind} found.`);
    else out(render(spec, items, opts.format, Boolean(opts.name)));
    if (opts.watch) await watch(client, opts, spec, out);
  } finally {
    client.close();
  }
}

async function watch(client: CapacityServiceClient, opts: GetOptions, spec: KindSpec<unknown>, out: (t: string) => void): Promise<void> {
  const structured = opts.format === 'json' || opts.format === 'yaml';
  if (opts.kind === 'instancetypes') {
    const stream = client.watchInstanceTypes({ pool: opts.pool ?? '', initial: false });
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
  // Nodes and pools change with inventories and heartbeats: re-read every second and print
  // only the rows whose content changed.
  const last = new Map<string, string>();
  const key = (x: unknown) => (x as { name: string }).name;
  const initial = opts.name ? [await spec.get(client, opts.name)] : await spec.list(client, opts.pool);
  for (const i of initial) last.set(key(i), JSON.stringify(spec.toJSON(i)));
  let stopped = false;
  process.once('SIGINT', () => (stopped = true));
  while (!stopped) {
    await new Promise((r) => setTimeout(r, 1000));
    const items = opts.name ? [await spec.get(client, opts.name)] : await spec.list(client, opts.pool);
    for (const i of items) {
      const json = JSON.stringify(spec.toJSON(i));
      if (last.get(key(i)) === json) continue;
      last.set(key(i), json);
      out(render(spec, [i], opts.format, true, structured));
    }
  }
}
