import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { NatsConnection } from 'nats';
import { join } from 'path';
import { ArtifactManifest, ArtifactNodeStatus, ArtifactSourceKind, Buckets, ModelArtifact, Secret, Workload } from '@gpufleet/contracts';
import { KvMirror, KvStore, NATS_CONNECTION, ReconcileLoop, type ReconcilePass } from '@gpufleet/messaging';
import { ModelCache, readPersistedLeases, servePeerBlobs, type DeliveryProgress, type DeliveryResult, type PeerServer, type TreeLease } from '@gpufleet/model-cache';
import { LOGGER, METRICS_REGISTRY, type Logger, type Registry } from '@gpufleet/observability';
import { DELIVERY_CONFIG, DeliveryConfig } from '../config';
import { secretValue } from '../secret-value';
import { CopySwarm } from './copy-swarm';
import { artifactsInUse, cacheManifestOf, hfCoordinates, wantedCopies, type WantedCopy } from './demand';

/** One node's cache and what it is doing. */
interface NodeCache {
  readonly node: string;
  readonly cache: ModelCache;
  readonly peer?: PeerServer;
  /** what this node tells its peers about the blobs of the copies it delivers (with PEER_TOKEN) */
  readonly swarm?: CopySwarm;
  /** artifact key → manifest digest being delivered now. */
  readonly deliveries: Map<string, string>;
  /** artifact key → the lease that keeps its tree from eviction while a pod of the node loads it. */
  readonly leases: Map<string, { readonly digest: string; readonly lease: TreeLease }>;
}

const COPY_KEY_PART = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
/** a copy that is not downloading lists no blobs: Ready holds them all, Failed and Evicted serve none */
const noBlobFields = (): Pick<ArtifactNodeStatus, 'verifiedFiles' | 'fetchingFiles'> => ({ verifiedFiles: [], fetchingFiles: [] });

/**
 * The node role: one ModelCache per node of NODE_NAMES, each filled with the artifacts that
 * name the node in `prefetch` or that a workload placed on the node loads (its EngineRun's
 * `artifact`; such a tree is leased, so never evicted, while the workload is there), its progress written to the artifact-nodes bucket
 * ("<node>.<namespace>.<name>", at most every 5 s or 5 %), and its verified blobs served to the
 * other nodes' caches when PEER_TOKEN is set. A copy is Ready only once every byte of its tree
 * matched the manifest; a failed or interrupted delivery is Failed with its reason, never left
 * Downloading.
 */
@Injectable()
export class NodeCachesService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger: Logger;
  private readonly caches = new Map<string, NodeCache>();
  private readonly opening = new Map<string, Promise<NodeCache>>();
  private artifacts?: KvMirror<ModelArtifact>;
  private copies?: KvMirror<ArtifactNodeStatus>;
  private workloads?: KvMirror<Workload>;
  private manifests?: KvStore<ArtifactManifest>;
  private secrets?: KvStore<Secret>;
  private readonly loop: ReconcileLoop;
  private stopping = false;
  /**
   * Nodes whose cache holds leases of an earlier process and is not open yet (read by the first
   * pass): passes open them, so that the leases no pod needs any more are released.
   */
  private oldLeases?: Set<string>;

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(DELIVERY_CONFIG) private readonly config: DeliveryConfig,
    @Inject(LOGGER) logger: Logger,
    @Inject(METRICS_REGISTRY) registry: Registry,
  ) {
    this.logger = logger.child({ context: 'node-cache' });
    this.loop = new ReconcileLoop({ name: 'node-caches', logger: this.logger, registry, pass: (run) => this.pass(run), retryMs: 5_000, resyncMs: 60_000 });
  }

  async onModuleInit(): Promise<void> {
    const js = this.nc.jetstream();
    const cluster = this.config.GPUFLEET_CLUSTER;
    const [artifacts, manifests, copies, secrets, workloads] = await Promise.all([
      KvStore.open(js, Buckets.artifacts(cluster), ModelArtifact),
      KvStore.open(js, Buckets.artifactManifests(cluster), ArtifactManifest),
      KvStore.open(js, Buckets.artifactNodes(cluster), ArtifactNodeStatus),
      KvStore.open(js, Buckets.secrets(cluster), Secret),
      KvStore.open(js, Buckets.workloads(cluster), Workload),
    ]);
    this.manifests = manifests;
    this.secrets = secrets;
    this.artifacts = new KvMirror(artifacts, { logger: this.logger });
    this.copies = new KvMirror(copies, { logger: this.logger });
    this.workloads = new KvMirror(workloads, { logger: this.logger });
    await Promise.all([this.artifacts.start(), this.copies.start(), this.workloads.start()]);
    this.artifacts.listen(() => this.loop.kick());
    this.workloads.listen(() => this.loop.kick());
    this.loop.start();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    await this.loop.stop();
    this.artifacts?.stop();
    this.copies?.stop();
    this.workloads?.stop();
    // Leases stay on disk: the pods of the node keep running through a restart of this process,
    // and the next one's first pass releases only what no pod needs any more.
    await Promise.all([...this.caches.values()].map(async (c) => {
      await c.peer?.close();
      await c.cache.close();
    }));
  }

  /** For tests: resolves once the running pass is over. */
  idle(): Promise<void> {
    return this.loop.idle();
  }

  cacheOf(node: string): ModelCache | undefined {
    return this.caches.get(node)?.cache;
  }

  /**
   * A node's cache, opened when the node first has something to hold: a local stack names every
   * simulated node in NODE_NAMES, and most of them never cache anything.
   */
  private cacheFor(node: string): Promise<NodeCache> {
    let opening = this.opening.get(node);
    if (!opening) {
      opening = this.open(node);
      this.opening.set(node, opening);
      opening.catch(() => this.opening.delete(node));
    }
    return opening;
  }

  private async open(node: string): Promise<NodeCache> {
    const opening: { cache?: ModelCache } = {};
    const swarm = this.config.PEER_TOKEN ? new CopySwarm(node, this.copies!, this.config.PEER_TOKEN, (d) => opening.cache?.verifiedBlob(d) !== undefined) : undefined;
    const cache = (opening.cache = await ModelCache.open({
      root: join(this.config.CACHE_DIR, node),
      streams: this.config.DOWNLOAD_STREAMS,
      stallTimeoutMs: this.config.DOWNLOAD_STALL_TIMEOUT_S * 1000,
      backoff: { initialMs: this.config.DOWNLOAD_BACKOFF_MIN_S * 1000, maxMs: this.config.DOWNLOAD_BACKOFF_MAX_S * 1000 },
      bandwidthBytesPerSecond: this.config.DOWNLOAD_BANDWIDTH_MIBPS > 0 ? this.config.DOWNLOAD_BANDWIDTH_MIBPS * 1024 * 1024 : undefined,
      watermarks: { high: this.config.CACHE_HIGH_WATERMARK_PERCENT / 100, low: this.config.CACHE_LOW_WATERMARK_PERCENT / 100 },
      capacityBytes: this.config.CACHE_CAPACITY_GIB > 0 ? this.config.CACHE_CAPACITY_GIB * 1024 ** 3 : undefined,
      peers: swarm?.directory(),
      localRoots: this.config.LOCAL_SOURCE_ROOTS,
      onEvent: (event) => {
        if (event.type === 'TreeEvicted') void this.evicted(node, event.digest);
        else if (event.type === 'DigestMismatch' || event.type === 'SourceFailed') this.logger.warn({ node, event }, `node ${node}: ${event.type} for ${event.path}`);
      },
    }));
    // PEER_PORT is the first node's port and the next ones go up from it, in NODE_NAMES order.
    const index = this.config.NODE_NAMES.indexOf(node);
    const peer = this.config.PEER_TOKEN
      ? await servePeerBlobs({ cache, token: this.config.PEER_TOKEN, host: this.config.HOST, port: this.config.PEER_PORT === 0 ? 0 : this.config.PEER_PORT + index })
      : undefined;
    const opened: NodeCache = { node, cache, peer, swarm, deliveries: new Map(), leases: new Map() };
    // Leases an earlier process took for this node's pods, held since the cache opened; the next
    // holdLeases keeps those still needed and releases the rest (and any second one per artifact).
    for (const lease of cache.heldLeases()) {
      if (opened.leases.has(lease.holder)) await lease.release();
      else opened.leases.set(lease.holder, { digest: lease.digest, lease });
    }
    this.oldLeases?.delete(node);
    this.caches.set(node, opened);
    return opened;
  }

  private peerUrlOf(c: NodeCache): string {
    if (!c.peer) return '';
    const host = this.config.PEER_ADVERTISE_HOST || this.config.HOST;
    return `http://${host.includes(':') ? `[${host}]` : host}:${c.peer.port}`;
  }

  private async pass(run: ReconcilePass): Promise<void> {
    const entries = [...(this.artifacts?.entries ?? [])].map(([key, e]): [string, ModelArtifact] => [key, e.value]);
    const workloads = [...(this.workloads?.entries ?? [])].map(([, e]) => e.value);
    const oldLeases = (this.oldLeases ??= await this.nodesWithPersistedLeases());
    const nodes = this.config.NODE_NAMES.map((node) => ({ node, wanted: wantedCopies(node, entries, artifactsInUse(node, workloads)) })).filter(
      (n) => n.wanted.length > 0 || (this.caches.get(n.node)?.leases.size ?? 0) > 0 || oldLeases.has(n.node),
    );
    await run.each(nodes, (n) => n.node, async ({ node, wanted }) => {
      const c = await this.cacheFor(node);
      await this.holdLeases(c, wanted);
      for (const want of wanted) {
        if (c.deliveries.get(want.artifact) === want.manifestDigest) continue;
        const current = this.copies?.get(this.copyKey(node, want.artifact))?.value;
        if (current?.state === 'Ready' && current.manifestDigest === want.manifestDigest && c.cache.trees().some((t) => t.digest === want.manifestDigest)) continue;
        c.deliveries.set(want.artifact, want.manifestDigest);
        void this.deliver(c, want)
          .catch((err: Error) => this.logger.warn({ node, artifact: want.artifact, err }, `node ${node}: delivering ${want.artifact} failed: ${err.message}`))
          .finally(() => {
            if (c.deliveries.get(want.artifact) === want.manifestDigest) c.deliveries.delete(want.artifact);
            // A pod may be waiting for this tree: the next pass leases it.
            if (want.inUse && !this.stopping) this.loop.kick();
          });
      }
    });
  }

  /**
   * One lease per artifact a pod of the node loads, on the tree of its current manifest once the
   * cache holds it; released when no pod needs it any more (or its manifest changed), so the
   * tree becomes evictable again.
   */
  private async holdLeases(c: NodeCache, wanted: readonly WantedCopy[]): Promise<void> {
    const needed = new Map(wanted.filter((w) => w.inUse).map((w) => [w.artifact, w.manifestDigest]));
    for (const [artifact, held] of [...c.leases]) {
      if (needed.get(artifact) === held.digest) continue;
      // released first: until then the tree is still in use, and a failed release is tried again next pass
      await held.lease.release();
      c.leases.delete(artifact);
    }
    const ready = new Set(c.cache.trees().map((t) => t.digest));
    for (const [artifact, digest] of needed) {
      if (c.leases.has(artifact) || !ready.has(digest)) continue;
      c.leases.set(artifact, { digest, lease: await c.cache.acquire(digest, { holder: artifact }) });
    }
  }

  /** Nodes whose cache directory holds leases of an earlier process (an unreadable lease file counts: opening the cache reports it). */
  private async nodesWithPersistedLeases(): Promise<Set<string>> {
    const found = await Promise.all(this.config.NODE_NAMES.map(async (node) => ((await readPersistedLeases(join(this.config.CACHE_DIR, node)).catch(() => [undefined])).length > 0 ? [node] : [])));
    return new Set(found.flat());
  }

  /** For tests and operators: the trees of `node` held for its pods, by artifact key. */
  leasesOf(node: string): Map<string, string> {
    return new Map([...(this.caches.get(node)?.leases ?? [])].map(([artifact, l]) => [artifact, l.digest]));
  }

  private copyKey(node: string, artifact: string): string {
    return `${node}.${artifact}`;
  }

  private async deliver(c: NodeCache, want: WantedCopy): Promise<void> {
    const key = this.copyKey(c.node, want.artifact);
    const [namespace, name] = want.artifact.split('.');
    if (!COPY_KEY_PART.test(namespace) || !COPY_KEY_PART.test(name)) return;
    const write = (status: Partial<ArtifactNodeStatus>) =>
      this.copies!.store.modify(key, (cur) => ({ ...ArtifactNodeStatus.fromPartial({ node: c.node, manifestDigest: want.manifestDigest, ...(cur?.value ?? {}) }), ...status, node: c.node, manifestDigest: want.manifestDigest, updatedAt: new Date() }));
    let result: DeliveryResult;
    try {
      const stored = await this.manifests!.get(want.manifestDigest.slice('sha256:'.length));
      if (!stored) throw new Error(`manifest ${want.manifestDigest} is not stored yet`);
      const token = await this.tokenOf(want.record);
      const manifest = cacheManifestOf(stored.value, token);
      const hf = this.config.CACHE_HF_LAYOUT && want.record.spec?.source?.kind === ArtifactSourceKind.ARTIFACT_SOURCE_KIND_HUGGINGFACE ? hfCoordinates(want.record, stored.value) : undefined;
      // peers may fetch the blobs this node verified while the rest still downloads: the peer URL is there from the start
      c.swarm?.track(key, want.manifestDigest, stored.value.files);
      await write({ state: 'Downloading', bytesDone: 0, bytesTotal: stored.value.files.reduce((s, f) => s + f.size, 0), percent: 0, reason: '', message: '', path: '', peerUrl: this.peerUrlOf(c), ...(c.swarm?.blobFields(key) ?? noBlobFields()) });
      result = await c.cache.ensure(manifest, {
        pin: Boolean(want.record.spec?.pinned),
        hf,
        onProgress: (p: DeliveryProgress) => {
          if (p.state === 'Downloading' && !this.stopping) void write({ state: 'Downloading', bytesDone: p.bytesDone, bytesTotal: p.bytesTotal, percent: Math.floor(p.percent) }).catch(() => undefined);
        },
      });
    } catch (err) {
      await write({ state: 'Failed', reason: 'CacheIOError', message: (err as Error).message, path: '', peerUrl: '', ...noBlobFields() });
      throw err;
    } finally {
      c.swarm?.untrack(key);
    }
    if (result.state === 'Ready') {
      await write({ state: 'Ready', bytesDone: result.bytesTotal, bytesTotal: result.bytesTotal, percent: 100, reason: '', message: '', path: result.hfSnapshotPath ?? result.path, peerBytes: result.peerBytes, peerUrl: this.peerUrlOf(c), ...noBlobFields() });
      this.logger.info({ node: c.node, artifact: want.artifact, originBytes: result.originBytes, peerBytes: result.peerBytes, resumedBytes: result.resumedBytes }, `node ${c.node}: ${want.artifact} is Ready (${result.originBytes} bytes from the origin, ${result.peerBytes} from peers)`);
    } else {
      await write({ state: 'Failed', reason: result.reason, message: result.message, path: '', peerBytes: result.peerBytes, peerUrl: '', ...noBlobFields() });
      this.logger.warn({ node: c.node, artifact: want.artifact, reason: result.reason }, `node ${c.node}: ${want.artifact} failed: ${result.message}`);
    }
  }

  /** A tree the cache evicted: every copy record of this node that named it is gone. */
  private async evicted(node: string, digest: string): Promise<void> {
    for (const [key, { value }] of this.copies?.entries ?? []) {
      if (value.node === node && value.manifestDigest === digest) await this.copies!.store.modify(key, (cur) => (cur ? { ...cur.value, state: 'Evicted', path: '', peerUrl: '', percent: 0, bytesDone: 0, updatedAt: new Date() } : undefined));
    }
  }

  private async tokenOf(record: ModelArtifact): Promise<string | undefined> {
    const ref = record.spec?.tokenFromSecret;
    return ref?.name ? secretValue(this.secrets!, record.spec!.namespace, ref.name, ref.key) : undefined;
  }

}
