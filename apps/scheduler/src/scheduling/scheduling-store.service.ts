import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { NatsConnection } from 'nats';
import { Buckets, ClusterQueue, GPUInstance, LocalQueue, ModelDeployment, NodeLedger, PodRuntimeStatus, Workload } from '@gpufleet/contracts';
import { KvChange, KvStore, KvWatchHandle, NATS_CONNECTION } from '@gpufleet/messaging';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { CapacityStateService } from '../capacity/capacity-state.service';
import { keyOfStoreKey } from './workload-keys';

export interface Cached<T> {
  value: T;
  revision: number;
}

type Listener<T> = (key: string, change: KvChange<T>) => void;

/** A watched bucket mirrored in memory, with listeners for changes. */
export class Mirror<T> {
  readonly entries = new Map<string, Cached<T>>();
  private readonly listeners = new Set<Listener<T>>();
  handle?: KvWatchHandle;

  constructor(
    readonly store: KvStore<T>,
    private readonly toKey: (stored: string) => string = (k) => k,
  ) {}

  start(logger: Logger): Promise<void> {
    this.handle = this.store.watch(
      (change) => {
        const key = this.toKey(change.key);
        if (change.kind === 'put') this.entries.set(key, { value: change.value, revision: change.revision });
        else this.entries.delete(key);
        for (const l of this.listeners) l(key, change);
      },
      { onCorrupt: (e) => logger.error(e.message), onError: (e) => logger.warn(`${this.store.bucket} watch interrupted, resuming: ${(e as Error).message}`) },
    );
    return this.handle.ready;
  }

  listen(listener: Listener<T>): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/**
 * The scheduler's state of record, mirrored from JetStream KV on every replica: workloads,
 * the devices ledger, ClusterQueues and LocalQueues. Only the leader writes workloads'
 * status and the ledger; any replica accepts submissions and queue changes.
 */
@Injectable()
export class SchedulingStore implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('store');
  workloads!: Mirror<Workload>;
  ledger!: Mirror<NodeLedger>;
  clusterQueues!: Mirror<ClusterQueue>;
  localQueues!: Mirror<LocalQueue>;
  deployments!: Mirror<ModelDeployment>;
  instances!: Mirror<GPUInstance>;
  /** Pods as the node runtimes report them, keyed as in the pods bucket. */
  pods!: Mirror<PodRuntimeStatus>;
  private synced = false;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
    private readonly capacity: CapacityStateService,
  ) {}

  get ready(): boolean {
    return this.synced;
  }

  async onModuleInit(): Promise<void> {
    const js = this.nc.jetstream();
    const c = this.config.GPUFLEET_CLUSTER;
    this.workloads = new Mirror(await KvStore.open(js, Buckets.workloads(c), Workload), keyOfStoreKey);
    this.ledger = new Mirror(await KvStore.open(js, Buckets.ledger(c), NodeLedger));
    this.clusterQueues = new Mirror(await KvStore.open(js, Buckets.clusterQueues(c), ClusterQueue));
    this.localQueues = new Mirror(await KvStore.open(js, Buckets.localQueues(c), LocalQueue), keyOfStoreKey);
    this.deployments = new Mirror(await KvStore.open(js, Buckets.deployments(c), ModelDeployment), keyOfStoreKey);
    this.instances = new Mirror(await KvStore.open(js, Buckets.instances(c), GPUInstance), keyOfStoreKey);
    this.pods = new Mirror(await KvStore.open(js, Buckets.pods(c), PodRuntimeStatus));
    // Capacity views reflect the ledger on every replica, leader or not.
    this.ledger.listen((node, change) => {
      this.capacity.applyLedger(node, change.kind === 'put' ? change.value : undefined);
    });
    await Promise.all(this.mirrors().map((m) => m.start(this.logger)));
    this.synced = true;
    this.logger.log(
      `scheduling state synced: ${this.workloads.entries.size} workloads, ${this.ledger.entries.size} node ledgers, ` +
        `${this.clusterQueues.entries.size} ClusterQueues, ${this.localQueues.entries.size} LocalQueues, ` +
        `${this.deployments.entries.size} deployments, ${this.instances.entries.size} instances, ${this.pods.entries.size} pods`,
    );
  }

  private mirrors(): Array<Mirror<unknown>> {
    return [this.workloads, this.ledger, this.clusterQueues, this.localQueues, this.deployments, this.instances, this.pods] as Array<Mirror<unknown>>;
  }

  onApplicationShutdown(): void {
    for (const m of this.mirrors()) m?.handle?.stop();
  }
}
