import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { NatsConnection } from 'nats';
import { ArtifactNodeStatus, Buckets, ClusterQueue, type JsonCodec, GPUInstance, LocalQueue, ModelArtifact, ModelDeployment, NodeLedger, PodRuntimeStatus, Workload } from '@gpufleet/contracts';
import { KvMirror, KvStore, NATS_CONNECTION } from '@gpufleet/messaging';
import { LOGGER, type Logger } from '@gpufleet/observability';
import type { ClusterQueueLookup } from '@gpufleet/scheduling-core';
import { SCHEDULER_CONFIG, SchedulerConfig } from '../config';
import { CapacityStateService } from '../capacity/capacity-state.service';
import { keyOfStoreKey } from './workload-keys';

/**
 * The scheduler's state of record, mirrored from JetStream KV on every replica: workloads,
 * the devices ledger, ClusterQueues and LocalQueues. Only the leader writes workloads'
 * status and the ledger; any replica accepts submissions and queue changes.
 */
@Injectable()
export class SchedulingStore implements OnModuleInit, OnApplicationShutdown {
  workloads!: KvMirror<Workload>;
  ledger!: KvMirror<NodeLedger>;
  clusterQueues!: KvMirror<ClusterQueue>;
  localQueues!: KvMirror<LocalQueue>;
  deployments!: KvMirror<ModelDeployment>;
  instances!: KvMirror<GPUInstance>;
  /** Pods as the node runtimes report them, keyed as in the pods bucket. */
  pods!: KvMirror<PodRuntimeStatus>;
  /** Each node's copies of ModelArtifacts ("<node>.<namespace>.<name>", written by model delivery): weight locality. */
  copies!: KvMirror<ArtifactNodeStatus>;
  /** ModelArtifacts ("<namespace>.<name>", written by model delivery): a deployment may name only one that exists. */
  artifacts!: KvMirror<ModelArtifact>;
  private synced = false;
  private readonly logger: Logger;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
    private readonly capacity: CapacityStateService,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.logger = logger.child({ context: 'store' });
  }

  get ready(): boolean {
    return this.synced;
  }

  /** The mirrored ClusterQueues, as routing a LocalQueue by pool reads them. */
  readonly clusterQueueLookup: ClusterQueueLookup = {
    get: (name) => this.clusterQueues.get(name)?.value,
    all: () => [...this.clusterQueues.entries.values()].map((e) => e.value),
  };

  async onModuleInit(): Promise<void> {
    const js = this.nc.jetstream();
    const c = this.config.GPUFLEET_CLUSTER;
    const mirror = async <T>(bucket: string, codec: JsonCodec<T>, toKey?: (k: string) => string): Promise<KvMirror<T>> =>
      new KvMirror(await KvStore.open(js, bucket, codec), { logger: this.logger, toKey });
    this.workloads = await mirror(Buckets.workloads(c), Workload, keyOfStoreKey);
    this.ledger = await mirror(Buckets.ledger(c), NodeLedger);
    this.clusterQueues = await mirror(Buckets.clusterQueues(c), ClusterQueue);
    this.localQueues = await mirror(Buckets.localQueues(c), LocalQueue, keyOfStoreKey);
    this.deployments = await mirror(Buckets.deployments(c), ModelDeployment, keyOfStoreKey);
    this.instances = await mirror(Buckets.instances(c), GPUInstance, keyOfStoreKey);
    this.pods = await mirror(Buckets.pods(c), PodRuntimeStatus);
    this.copies = await mirror(Buckets.artifactNodes(c), ArtifactNodeStatus);
    this.artifacts = await mirror(Buckets.artifacts(c), ModelArtifact);
    // Capacity views reflect the ledger on every replica, leader or not.
    this.ledger.listen((node, change) => {
      this.capacity.applyLedger(node, change.kind === 'put' ? change.value : undefined);
    });
    await Promise.all(this.mirrors().map((m) => m.start()));
    this.synced = true;
    this.logger.info(
      `scheduling state synced: ${this.workloads.entries.size} workloads, ${this.ledger.entries.size} node ledgers, ` +
        `${this.clusterQueues.entries.size} ClusterQueues, ${this.localQueues.entries.size} LocalQueues, ` +
        `${this.deployments.entries.size} deployments, ${this.instances.entries.size} instances, ${this.pods.entries.size} pods`,
    );
  }

  private mirrors(): Array<KvMirror<unknown>> {
    return [this.workloads, this.ledger, this.clusterQueues, this.localQueues, this.deployments, this.instances, this.pods, this.copies, this.artifacts] as Array<KvMirror<unknown>>;
  }

  onApplicationShutdown(): void {
    for (const m of this.mirrors()) m?.stop();
  }
}
