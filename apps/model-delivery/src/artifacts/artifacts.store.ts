import { Inject, Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { NatsConnection } from 'nats';
import { ArtifactManifest, ArtifactNodeStatus, Buckets, ModelArtifact, storeKey, workloadKey } from '@gpufleet/contracts';
import { KvMirror, KvStore, NATS_CONNECTION } from '@gpufleet/messaging';
import { LOGGER, type Logger } from '@gpufleet/observability';
import { DELIVERY_CONFIG, DeliveryConfig } from '../config';

/** "<node>.<namespace>.<name>" → the node and the artifact's bucket key "<namespace>.<name>". */
export function parseNodeCopyKey(key: string): { node: string; artifact: string } | undefined {
  // Namespace and name are DNS labels (no dots); a node name may have dots (an FQDN), so the
  // last two tokens are the artifact's.
  const parts = key.split('.');
  if (parts.length < 3 || parts.some((p) => p === '')) return undefined;
  return { node: parts.slice(0, -2).join('.'), artifact: parts.slice(-2).join('.') };
}

export function nodeCopyKey(node: string, namespace: string, name: string): string {
  return `${node}.${storeKey(workloadKey(namespace, name))}`;
}

/**
 * The three buckets of model delivery, mirrored: artifacts (spec + the control role's status),
 * their manifests (by digest), and each node's copy (written by that node's cache). Get/List
 * answer from memory and join the node copies into `status.nodes`.
 */
@Injectable()
export class ArtifactsStore implements OnModuleInit, OnModuleDestroy {
  private artifactsMirror?: KvMirror<ModelArtifact>;
  private nodesMirror?: KvMirror<ArtifactNodeStatus>;
  private manifestsStore?: KvStore<ArtifactManifest>;
  /** artifact bucket key → node → copy. */
  private readonly copies = new Map<string, Map<string, ArtifactNodeStatus>>();

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(DELIVERY_CONFIG) private readonly config: DeliveryConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onModuleInit(): Promise<void> {
    const js = this.nc.jetstream();
    const cluster = this.config.GPUFLEET_CLUSTER;
    const [artifacts, manifests, nodes] = await Promise.all([
      KvStore.open(js, Buckets.artifacts(cluster), ModelArtifact),
      KvStore.open(js, Buckets.artifactManifests(cluster), ArtifactManifest),
      KvStore.open(js, Buckets.artifactNodes(cluster), ArtifactNodeStatus),
    ]);
    this.manifestsStore = manifests;
    this.artifactsMirror = new KvMirror(artifacts, { logger: this.logger });
    this.nodesMirror = new KvMirror(nodes, { logger: this.logger });
    this.nodesMirror.listen((key, change) => this.applyCopy(key, change.kind === 'put' ? change.value : undefined));
    await Promise.all([this.artifactsMirror.start(), this.nodesMirror.start()]);
    for (const [key, entry] of this.nodesMirror.entries) this.applyCopy(key, entry.value);
  }

  onModuleDestroy(): void {
    this.artifactsMirror?.stop();
    this.nodesMirror?.stop();
  }

  get artifacts(): KvMirror<ModelArtifact> {
    if (!this.artifactsMirror) throw new Error('the artifacts bucket is not open yet');
    return this.artifactsMirror;
  }

  get manifests(): KvStore<ArtifactManifest> {
    if (!this.manifestsStore) throw new Error('the artifact-manifests bucket is not open yet');
    return this.manifestsStore;
  }

  get nodeCopies(): KvMirror<ArtifactNodeStatus> {
    if (!this.nodesMirror) throw new Error('the artifact-nodes bucket is not open yet');
    return this.nodesMirror;
  }

  /** The artifact as the API shows it: its record with every node's copy of its current manifest, sorted by node. */
  shown(artifact: ModelArtifact): ModelArtifact {
    const spec = artifact.spec;
    if (!spec || !artifact.status) return artifact;
    const copies = this.copies.get(storeKey(workloadKey(spec.namespace, spec.name)));
    const nodes = copies ? [...copies.values()].sort((a, b) => a.node.localeCompare(b.node)) : [];
    return { ...artifact, status: { ...artifact.status, nodes } };
  }

  private applyCopy(key: string, copy: ArtifactNodeStatus | undefined): void {
    const parsed = parseNodeCopyKey(key);
    if (!parsed) return;
    let byNode = this.copies.get(parsed.artifact);
    if (!copy) {
      byNode?.delete(parsed.node);
      if (byNode?.size === 0) this.copies.delete(parsed.artifact);
      return;
    }
    if (!byNode) this.copies.set(parsed.artifact, (byNode = new Map()));
    // The key names the node: a record that claims another node is not believed.
    byNode.set(parsed.node, { ...copy, node: parsed.node });
  }
}
