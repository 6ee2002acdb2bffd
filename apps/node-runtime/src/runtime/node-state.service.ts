import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { NatsConnection } from 'nats';
import { Buckets, NodeInventory, NodeLedger, PodRuntimeStatus, Workload } from '@gpufleet/contracts';
import { KvMirror, KvStore, NATS_CONNECTION } from '@gpufleet/messaging';
import { LOGGER, type Logger } from '@gpufleet/observability';
import { NODE_RUNTIME_CONFIG, NodeRuntimeConfig } from '../config';

/**
 * What this node should run, mirrored from JetStream KV (KvMirror): its inventory and its ledger
 * (one key each) and every workload. The mirrors resume from the last revision after a NATS
 * restart, so they catch up with whatever changed meanwhile. Listeners hear of every relevant change.
 */
@Injectable()
export class NodeState implements OnModuleInit, OnApplicationShutdown {
  private readonly logger: Logger;
  /** Where this runtime reports its pods; opened here with the other buckets. */
  pods!: KvStore<PodRuntimeStatus>;
  private mirrors!: { nodes: KvMirror<NodeInventory>; ledger: KvMirror<NodeLedger>; workloads: KvMirror<Workload> };
  private readonly listeners = new Set<() => void>();
  private readonly unsubscribe: Array<() => void> = [];
  private synced = false;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(NODE_RUNTIME_CONFIG) private readonly config: NodeRuntimeConfig,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.logger = logger.child({ context: 'node-state' });
  }

  /** True once every bucket's current content has been read. */
  get ready(): boolean {
    return this.synced;
  }

  get inventory(): NodeInventory | undefined {
    return this.mirrors.nodes.get(this.config.NODE_NAME)?.value;
  }

  get ledger(): NodeLedger | undefined {
    return this.mirrors.ledger.get(this.config.NODE_NAME)?.value;
  }

  /** Every workload of the cluster, by its key in the workloads bucket ("<namespace>.<name>"). */
  readonly workloads = { get: (storeKey: string): Workload | undefined => this.mirrors.workloads.get(storeKey)?.value };

  async onModuleInit(): Promise<void> {
    const js = this.nc.jetstream();
    const cluster = this.config.GPUFLEET_CLUSTER;
    const [nodes, ledger, workloads, pods] = await Promise.all([
      KvStore.open(js, Buckets.nodes(cluster), NodeInventory),
      KvStore.open(js, Buckets.ledger(cluster), NodeLedger),
      KvStore.open(js, Buckets.workloads(cluster), Workload),
      KvStore.open(js, Buckets.pods(cluster), PodRuntimeStatus),
    ]);
    // The nodes and ledger buckets hold every node; only this node's key matters here.
    const mine = (key: string) => key === this.config.NODE_NAME;
    this.mirrors = {
      nodes: new KvMirror(nodes, { logger: this.logger, filter: mine }),
      ledger: new KvMirror(ledger, { logger: this.logger, filter: mine }),
      workloads: new KvMirror(workloads, { logger: this.logger }),
    };
    this.pods = pods;
  }

  /** Starts the mirrors; resolves once the current content of every bucket is mirrored. */
  async start(): Promise<void> {
    const all = Object.values(this.mirrors) as Array<KvMirror<unknown>>;
    for (const mirror of all) this.unsubscribe.push(mirror.listen(() => this.changed()));
    await Promise.all(all.map((m) => m.start()));
    this.synced = true;
    const workloads = this.mirrors.workloads.entries.size;
    this.logger.info(
      `state of node ${this.config.NODE_NAME} loaded: inventory ${this.inventory ? `with ${this.inventory.accelerators.length} accelerators` : 'not published yet'}, ` +
        `${this.ledger?.entries.length ?? 0} ledger entries, ${workloads} workloads in the cluster`,
    );
  }

  /** Called after every change of this node's inventory or ledger, or of any workload. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stop(): void {
    for (const off of this.unsubscribe.splice(0)) off();
    for (const mirror of Object.values(this.mirrors ?? {}) as Array<KvMirror<unknown>>) mirror.stop();
  }

  onApplicationShutdown(): void {
    this.stop();
  }

  private changed(): void {
    for (const listener of [...this.listeners]) listener();
  }
}
