import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { NatsConnection } from 'nats';
import { Buckets, NodeInventory, NodeLedger, PodRuntimeStatus, Workload } from '@gpufleet/contracts';
import { KvStore, NATS_CONNECTION, type KvChange, type KvWatchHandle } from '@gpufleet/messaging';
import { NODE_RUNTIME_CONFIG, NodeRuntimeConfig } from '../config';

/**
 * What this node should run, mirrored from JetStream KV: its inventory and its ledger (one key
 * each) and every workload. The watches resume from the last revision after a NATS restart, so
 * the mirror catches up with whatever changed meanwhile. Listeners hear of every relevant change.
 */
@Injectable()
export class NodeState implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('node-state');
  inventory: NodeInventory | undefined;
  ledger: NodeLedger | undefined;
  readonly workloads = new Map<string, Workload>();
  /** Where this runtime reports its pods; opened here with the other buckets. */
  pods!: KvStore<PodRuntimeStatus>;
  private stores!: { nodes: KvStore<NodeInventory>; ledger: KvStore<NodeLedger>; workloads: KvStore<Workload> };
  private readonly handles: KvWatchHandle[] = [];
  private readonly listeners = new Set<() => void>();
  private synced = false;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(NODE_RUNTIME_CONFIG) private readonly config: NodeRuntimeConfig,
  ) {}

  /** True once every bucket's current content has been read. */
  get ready(): boolean {
    return this.synced;
  }

  async onModuleInit(): Promise<void> {
    const js = this.nc.jetstream();
    const cluster = this.config.GPUFLEET_CLUSTER;
    const [nodes, ledger, workloads, pods] = await Promise.all([
      KvStore.open(js, Buckets.nodes(cluster), NodeInventory),
      KvStore.open(js, Buckets.ledger(cluster), NodeLedger),
      KvStore.open(js, Buckets.workloads(cluster), Workload),
      KvStore.open(js, Buckets.pods(cluster), PodRuntimeStatus),
    ]);
    this.stores = { nodes, ledger, workloads };
    this.pods = pods;
  }

  /** Starts the watches; resolves once the current content of every bucket is mirrored. */
  async start(): Promise<void> {
    const node = this.config.NODE_NAME;
    const watch = <T>(store: KvStore<T>, apply: (change: KvChange<T>) => boolean): KvWatchHandle =>
      store.watch(
        (change) => {
          if (apply(change)) this.changed();
        },
        {
          onCorrupt: (err) => this.logger.error(err.message),
          onError: (err) => this.logger.warn(`${store.bucket} watch interrupted, resuming: ${(err as Error).message}`),
        },
      );
    // The nodes and ledger buckets hold every node; only this node's key matters here.
    this.handles.push(
      watch(this.stores.nodes, (change) => {
        if (change.key !== node) return false;
        this.inventory = change.kind === 'put' ? change.value : undefined;
        return true;
      }),
      watch(this.stores.ledger, (change) => {
        if (change.key !== node) return false;
        this.ledger = change.kind === 'put' ? change.value : undefined;
        return true;
      }),
      watch(this.stores.workloads, (change) => {
        if (change.kind === 'put') this.workloads.set(change.key, change.value);
        else this.workloads.delete(change.key);
        return true;
      }),
    );
    await Promise.all(this.handles.map((h) => h.ready));
    this.synced = true;
    this.logger.log(
      `state of node ${node} loaded: inventory ${this.inventory ? `with ${this.inventory.accelerators.length} accelerators` : 'not published yet'}, ` +
        `${this.ledger?.entries.length ?? 0} ledger entries, ${this.workloads.size} workloads in the cluster`,
    );
  }

  /** Called after every change of this node's inventory or ledger, or of any workload. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stop(): void {
    for (const h of this.handles.splice(0)) h.stop();
  }

  onApplicationShutdown(): void {
    this.stop();
  }

  private changed(): void {
    for (const listener of [...this.listeners]) listener();
  }
}
