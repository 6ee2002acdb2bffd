import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { NatsConnection } from 'nats';
import { ArtifactNodeStatus, Buckets, NodeInventory, NodeLedger, NodeRuntimeReport, parsePodStoreKey, PodRuntimeStatus, Secret, storeKey, workloadKey, Workload } from '@gpufleet/contracts';
import { SECRETS_BUCKET_HISTORY } from '@gpufleet/deployments-core';
import type { SecretLookup, WeightsLookup } from '@gpufleet/node-runtime-core';
import { KvMirror, KvStore, NATS_CONNECTION } from '@gpufleet/messaging';
import { LOGGER, type Logger } from '@gpufleet/observability';
import { NODE_RUNTIME_CONFIG, NodeRuntimeConfig, nodeNamesOf } from '../config';

/** What one node's pods are planned from: its inventory, its ledger and the cluster's workloads. */
export interface NodeView {
  readonly node: string;
  readonly inventory: NodeInventory | undefined;
  readonly ledger: NodeLedger | undefined;
  readonly workloads: { get(storeKey: string): Workload | undefined };
  /** Where the pods' env_from_secret references are resolved when they start. */
  readonly secrets: SecretLookup;
  /** This node's copies of ModelArtifacts (artifact-nodes bucket, written by the node's model cache). */
  readonly weights: WeightsLookup;
  /** The record of a multi-node replica's leader (pod 0), by its pods-bucket key: where its workers meet it. */
  leaderRecord(podKey: string): PodRuntimeStatus | undefined;
  /** The records of every pod of a multi-node workload, whichever node runs it. */
  groupMembers(namespace: string, workload: string): PodRuntimeStatus[];
}

/**
 * Called after a change: `node` when only that node's inventory or ledger changed, undefined
 * when a workload or a Secret changed (any node may run its pods).
 */
export type NodeStateListener = (node: string | undefined) => void;

/**
 * What this runtime's nodes should run, mirrored from JetStream KV (KvMirror): their inventories
 * and ledgers (one key per node) and every workload. One mirror per bucket serves every node of
 * the process, so a runtime standing in for a thousand simulated nodes still holds four watches.
 * The secrets bucket is mirrored too, so a pod waiting for a Secret starts as soon as it is
 * written; its values stay in this process's memory and the environments of the pods that use them.
 * The mirrors resume from the last revision after a NATS restart, so they catch up with whatever
 * changed meanwhile.
 */
@Injectable()
export class NodeState implements OnModuleInit, OnApplicationShutdown {
  private readonly logger: Logger;
  private readonly cluster: string;
  /** The nodes this process runs pods for, in configuration order. */
  readonly nodes: readonly string[];
  /** Where this runtime reports its pods; opened here with the other buckets. */
  pods!: KvStore<PodRuntimeStatus>;
  /** Where this runtime says, per node, whether it sandboxes pods (the scheduler reads it). */
  runtimes!: KvStore<NodeRuntimeReport>;
  private mirrors!: {
    nodes: KvMirror<NodeInventory>;
    ledger: KvMirror<NodeLedger>;
    workloads: KvMirror<Workload>;
    secrets: KvMirror<Secret>;
    groups: KvMirror<PodRuntimeStatus>;
    copies: KvMirror<ArtifactNodeStatus>;
  };
  /** Pods-bucket keys of the members of each multi-node workload ("<namespace>/<workload>"). */
  private readonly groupKeys = new Map<string, Set<string>>();
  private readonly listeners = new Set<NodeStateListener>();
  private readonly unsubscribe: Array<() => void> = [];
  private synced = false;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(NODE_RUNTIME_CONFIG) config: NodeRuntimeConfig,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.logger = logger.child({ context: 'node-state' });
    this.nodes = nodeNamesOf(config);
    this.cluster = config.GPUFLEET_CLUSTER;
  }

  /** True once every bucket's current content has been read. */
  get ready(): boolean {
    return this.synced;
  }

  /** One node's view; reads go to the live mirrors. */
  view(node: string): NodeView {
    const mirrors = () => this.mirrors;
    const workloads = { get: (storeKey: string): Workload | undefined => mirrors().workloads.get(storeKey)?.value };
    const secrets: SecretLookup = { get: (namespace, name) => mirrors().secrets.get(storeKey(workloadKey(namespace, name)))?.value.data };
    // Keyed "<node>.<namespace>.<name>" (model delivery's copyKey).
    const weights: WeightsLookup = { copyOf: (namespace, artifact) => mirrors().copies.get(`${node}.${namespace}.${artifact}`)?.value };
    return {
      node,
      weights,
      get inventory() {
        return mirrors().nodes.get(node)?.value;
      },
      get ledger() {
        return mirrors().ledger.get(node)?.value;
      },
      workloads,
      secrets,
      leaderRecord: (podKey: string) => mirrors().groups.get(podKey)?.value,
      groupMembers: (namespace: string, workload: string) =>
        [...(this.groupKeys.get(`${namespace}/${workload}`) ?? [])].map((key) => mirrors().groups.get(key)?.value).filter((v): v is PodRuntimeStatus => v !== undefined),
    };
  }

  async onModuleInit(): Promise<void> {
    const js = this.nc.jetstream();
    const cluster = this.cluster;
    const [nodes, ledger, workloads, pods, secrets, runtimes, copies] = await Promise.all([
      KvStore.open(js, Buckets.nodes(cluster), NodeInventory),
      KvStore.open(js, Buckets.ledger(cluster), NodeLedger),
      KvStore.open(js, Buckets.workloads(cluster), Workload),
      KvStore.open(js, Buckets.pods(cluster), PodRuntimeStatus),
      KvStore.open(js, Buckets.secrets(cluster), Secret, { history: SECRETS_BUCKET_HISTORY }),
      KvStore.open(js, Buckets.runtimes(cluster), NodeRuntimeReport),
      // Created by model delivery's control role (or the scheduler); a cluster without model
      // delivery never has a copy, and engines naming an artifact wait.
      KvStore.open(js, Buckets.artifactNodes(cluster), ArtifactNodeStatus),
    ]);
    // The nodes and ledger buckets hold every node of the cluster; only this process's keys matter.
    const mine = new Set(this.nodes);
    const filter = (key: string) => mine.has(key);
    this.mirrors = {
      nodes: new KvMirror(nodes, { logger: this.logger, filter }),
      ledger: new KvMirror(ledger, { logger: this.logger, filter }),
      workloads: new KvMirror(workloads, { logger: this.logger }),
      secrets: new KvMirror(secrets, { logger: this.logger }),
      // Every pod's record: a worker reads its leader's rendezvous there, and the members of a
      // group see one another come and go (only group members' changes are acted on).
      groups: new KvMirror(pods, { logger: this.logger }),
      // Only this process's nodes' copies: the bucket holds one per node and artifact.
      copies: new KvMirror(copies, { logger: this.logger, filter: (key) => mine.has(key.slice(0, key.indexOf('.'))) }),
    };
    this.pods = pods;
    this.runtimes = runtimes;
  }

  /** Starts the mirrors; resolves once the current content of every bucket is mirrored. */
  async start(): Promise<void> {
    const { nodes, ledger, workloads, secrets, groups, copies } = this.mirrors;
    const seen = new Map<string, string>();
    this.unsubscribe.push(
      nodes.listen((key) => this.changed(key)),
      ledger.listen((key) => this.changed(key)),
      workloads.listen(() => this.changed(undefined)),
      secrets.listen(() => this.changed(undefined)),
      // A copy's progress or readiness changes what its node's waiting pods report or start.
      copies.listen((key) => this.changed(key.slice(0, key.indexOf('.')))),
      // Only what a group's other members act on: where its leader is met, and whether a member
      // is up or gone; not every state change of every pod.
      groups.listen((key, change) => {
        const value = change.kind === 'put' && change.value.groupRole ? change.value : undefined;
        const ref = parsePodStoreKey(key);
        if (ref) {
          const workload = `${ref.namespace}/${ref.workload}`;
          const members = this.groupKeys.get(workload) ?? new Set<string>();
          if (value) members.add(key);
          else members.delete(key);
          if (members.size > 0) this.groupKeys.set(workload, members);
          else this.groupKeys.delete(workload);
        }
        const signature = value ? `${value.groupRole}|${value.host}:${value.groupPort}|${value.state}` : '';
        if ((seen.get(key) ?? '') === signature) return;
        if (signature) seen.set(key, signature);
        else seen.delete(key);
        this.changed(undefined);
      }),
    );
    await Promise.all([nodes.start(), ledger.start(), workloads.start(), secrets.start(), groups.start(), copies.start()]);
    this.synced = true;
    const inventories = this.nodes.filter((n) => nodes.get(n) !== undefined).length;
    const first = this.view(this.nodes[0]);
    const what =
      this.nodes.length === 1
        ? `node ${first.node} loaded: inventory ${first.inventory ? `with ${first.inventory.accelerators.length} accelerators` : 'not published yet'}, ${first.ledger?.entries.length ?? 0} ledger entries`
        : `${this.nodes.length} nodes loaded: ${inventories} inventories published, ${ledger.entries.size} ledgers`;
    this.logger.info(`state of ${what}, ${workloads.entries.size} workloads in the cluster`);
  }

  /** Called after every change of one of these nodes' inventory or ledger, or of any workload. */
  onChange(listener: NodeStateListener): () => void {
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

  private changed(node: string | undefined): void {
    for (const listener of [...this.listeners]) listener(node);
  }
}
