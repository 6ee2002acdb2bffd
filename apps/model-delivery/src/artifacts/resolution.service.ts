import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { NatsConnection } from 'nats';
import { hostname } from 'os';
import { ArtifactPhase, Buckets, Lease, Secret, type ModelArtifactStatus } from '@gpufleet/contracts';
import { KvStore, LeaderLease, NATS_CONNECTION, ReconcileLoop, type ReconcilePass } from '@gpufleet/messaging';
import { LOGGER, METRICS_REGISTRY, type Logger, type Registry } from '@gpufleet/observability';
import { DELIVERY_CONFIG, DeliveryConfig } from '../config';
import { artifactModelOf, describeArtifact, HttpRangeReader, ModelEstimateError, RangeReadError } from '@gpufleet/model-estimate';
import { ArtifactsStore } from './artifacts.store';
import { secretValue } from '../secret-value';
import { manifestKey } from './manifests';
import { ArtifactResolver, ResolveFailure, RETRYABLE_REASONS } from './resolver';

/** What to do with an artifact now, from its status and the clock. */
export function resolutionDue(status: ModelArtifactStatus | undefined, nowMs: number, config: Pick<DeliveryConfig, 'REVALIDATE_S' | 'RETRY_S'>): 'resolve' | 'revalidate' | undefined {
  if (!status) return 'resolve';
  const checked = status.checkedAt?.getTime() ?? 0;
  switch (status.phase) {
    case ArtifactPhase.ARTIFACT_PHASE_RESOLVING:
    case ArtifactPhase.ARTIFACT_PHASE_UNSPECIFIED:
      return checked === 0 || nowMs - checked >= config.RETRY_S * 1000 ? 'resolve' : undefined;
    case ArtifactPhase.ARTIFACT_PHASE_FAILED:
      // A refusal the source gave for good (revision not found, access denied) waits for the
      // next revalidation; an outage is retried soon.
      return nowMs - checked >= (RETRYABLE_REASONS.has(status.reason) ? config.RETRY_S : config.REVALIDATE_S) * 1000 ? 'resolve' : undefined;
    case ArtifactPhase.ARTIFACT_PHASE_READY:
      return nowMs - checked >= config.REVALIDATE_S * 1000 ? 'revalidate' : undefined;
    case ArtifactPhase.ARTIFACT_PHASE_DEGRADED:
      return nowMs - checked >= config.RETRY_S * 1000 ? 'revalidate' : undefined;
  }
  return undefined;
}

/**
 * Whether the artifact's manifest still needs a model description: it has a manifest that the
 * status does not describe yet (or described from another digest).
 */
export function descriptionDue(status: ModelArtifactStatus | undefined): boolean {
  if (!status?.manifestDigest) return false;
  if (status.phase !== ArtifactPhase.ARTIFACT_PHASE_READY && status.phase !== ArtifactPhase.ARTIFACT_PHASE_DEGRADED) return false;
  return status.modelDigest !== status.manifestDigest;
}

/**
 * The control role's one controller: the leader (lease "model-delivery") resolves new artifacts
 * to manifests, retries those whose source was down, and revalidates resolved ones. A resolved
 * artifact whose source fails later turns Degraded and keeps its manifest: node caches go on
 * serving it, and nothing is ever shown as gone because a hub had an outage.
 */
@Injectable()
export class ResolutionService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger: Logger;
  private lease?: LeaderLease;
  private secrets?: KvStore<Secret>;
  private readonly loop: ReconcileLoop;
  readonly holder = `model-delivery@${hostname()}/${process.pid}`;
  /** Artifact key → when its description last failed for a transient reason (ms): retried after RETRY_S. */
  private readonly describeFailedAt = new Map<string, number>();

  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(DELIVERY_CONFIG) private readonly config: DeliveryConfig,
    private readonly store: ArtifactsStore,
    private readonly resolver: ArtifactResolver,
    @Inject(LOGGER) logger: Logger,
    @Inject(METRICS_REGISTRY) registry: Registry,
  ) {
    this.logger = logger.child({ context: 'resolution' });
    this.loop = new ReconcileLoop({
      name: 'artifacts',
      logger: this.logger,
      registry,
      pass: (run) => this.pass(run),
      resyncMs: Math.min(config.RETRY_S, config.REVALIDATE_S) * 1000,
      retryMs: Math.min(config.RETRY_S, 5) * 1000,
    });
  }

  get isLeader(): boolean {
    return this.lease?.isLeader ?? false;
  }

  kick(): void {
    if (this.isLeader) this.loop.kick();
  }

  /** Resolves once the running pass (if any) is over: for tests. */
  idle(): Promise<void> {
    return this.loop.idle();
  }

  async onApplicationBootstrap(): Promise<void> {
    const js = this.nc.jetstream();
    const cluster = this.config.GPUFLEET_CLUSTER;
    const [leases, secrets] = await Promise.all([KvStore.open(js, Buckets.leases(cluster), Lease), KvStore.open(js, Buckets.secrets(cluster), Secret)]);
    this.secrets = secrets;
    this.store.artifacts.listen(() => this.kick());
    this.lease = new LeaderLease(leases, 'model-delivery', {
      holder: this.holder,
      renewEveryMs: this.config.LEADER_RENEW_S * 1000,
      expireAfterMs: this.config.LEADER_EXPIRE_S * 1000,
      onAcquired: (term) => {
        this.logger.info({ term }, `${this.holder} resolves artifacts (term ${term})`);
        this.loop.start();
      },
      onLost: (why) => {
        this.logger.warn(`no longer resolving artifacts: ${why}`);
        void this.loop.stop();
      },
      onError: (err) => this.logger.warn(`lease: ${(err as Error).message}`),
    });
    this.lease.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.loop.stop();
    await this.lease?.stop(true);
  }

  private async pass(run: ReconcilePass): Promise<void> {
    const now = Date.now();
    const due = [...this.store.artifacts.entries].filter(([, e]) => resolutionDue(e.value.status, now, this.config) !== undefined);
    await run.each(due, ([key]) => key, ([key]) => this.resolveOne(key), { parallel: true });
    const describe = [...this.store.artifacts.entries].filter(
      ([key, e]) => descriptionDue(e.value.status) && now - (this.describeFailedAt.get(key) ?? -Infinity) >= this.config.RETRY_S * 1000,
    );
    // One at a time: each reads a few headers, and a hub is better not hit by every artifact at once.
    await run.each(describe, ([key]) => `describe ${key}`, ([key]) => this.describeOne(key));
  }

  /**
   * Reads what the weights are from the artifact itself (config.json and the safetensors headers
   * or GGUF metadata, a few KiB per file through Range requests) and stores it in the status. An
   * artifact that is not a model, or whose headers are malformed, gets `estimateError` (its phase
   * is unaffected); a hub that does not answer leaves it undescribed, tried again after RETRY_S.
   */
  private async describeOne(key: string): Promise<void> {
    const entry = this.store.artifacts.get(key);
    const spec = entry?.value.spec;
    const digest = entry?.value.status?.manifestDigest;
    if (!entry || !spec || !digest) return;
    const manifest = (await this.store.manifests.get(manifestKey(digest)))?.value;
    if (!manifest) return; // written before the status names it; the next pass finds it
    const tokenRef = spec.tokenFromSecret;
    const reader = new HttpRangeReader(
      manifest.files.map((f) => ({ path: f.path, url: f.downloadUrl, needsToken: f.needsToken, size: f.size })),
      {
        requestTimeoutMs: this.config.RESOLVE_TIMEOUT_S * 1000,
        token: async () => (tokenRef?.name ? secretValue(this.secrets!, spec.namespace, tokenRef.name, tokenRef.key) : undefined),
      },
    );
    let next: Pick<ModelArtifactStatus, 'model' | 'estimateError'>;
    try {
      next = { model: artifactModelOf(await describeArtifact(reader, manifest.files.map((f) => f.path))), estimateError: '' };
    } catch (err) {
      if (err instanceof ModelEstimateError || (err instanceof RangeReadError && !err.transient)) {
        next = { model: undefined, estimateError: err.message };
      } else {
        this.describeFailedAt.set(key, Date.now());
        this.logger.warn({ artifact: key, err }, `artifact ${key}: reading its model description failed, tried again in ${this.config.RETRY_S} s: ${(err as Error).message}`);
        return;
      }
    }
    this.describeFailedAt.delete(key);
    await this.store.artifacts.store.modify(key, (current) => {
      if (!current || current.value.uid !== entry.value.uid || current.value.status?.manifestDigest !== digest) return undefined;
      return { ...current.value, status: { ...current.value.status, ...next, modelDigest: digest, nodes: [] } };
    });
    this.logger.info({ artifact: key, requests: reader.requests }, next.model ? `artifact ${key}: ${next.model.shape?.architecture} model, ${next.model.weightsBytes} bytes of weights (${next.model.weightsSource})` : `artifact ${key}: no model description: ${next.estimateError}`);
  }

  private async resolveOne(key: string): Promise<void> {
    const entry = this.store.artifacts.get(key);
    const spec = entry?.value.spec;
    if (!entry || !spec) return;
    const mode = resolutionDue(entry.value.status, Date.now(), this.config);
    if (!mode) return;
    const checkedAt = new Date();
    let next: Partial<ModelArtifactStatus>;
    try {
      const resolved = await this.resolver.resolve(spec, (ref) => secretValue(this.secrets!, spec.namespace, ref.name, ref.key));
      // Content-addressed: a digest's manifest is written once and never changes.
      const manifest = { digest: resolved.digest, text: resolved.text, commit: resolved.commit, files: resolved.files };
      await this.store.manifests.modify(manifestKey(resolved.digest), (current) => (current ? undefined : manifest));
      const before = entry.value.status?.manifestDigest;
      if (before && before !== resolved.digest) {
        // The pinned commit now lists other files (a force-push): the manifest nodes hold stays
        // what it was; the artifact says so and keeps serving it.
        next = {
          phase: ArtifactPhase.ARTIFACT_PHASE_DEGRADED,
          reason: 'DigestMismatch',
          message: `the source now resolves to ${resolved.digest}, not the ${before} this artifact was resolved to; create a new artifact to take the new files`,
        };
      } else {
        next = {
          phase: ArtifactPhase.ARTIFACT_PHASE_READY,
          commit: resolved.commit,
          manifestDigest: resolved.digest,
          fileCount: resolved.files.length,
          totalBytes: resolved.files.reduce((sum, f) => sum + f.size, 0),
          reason: '',
          message: '',
          resolvedAt: entry.value.status?.resolvedAt ?? checkedAt,
        };
      }
    } catch (err) {
      if (!(err instanceof ResolveFailure)) throw err;
      const had = entry.value.status?.manifestDigest || err.fallbackDigest;
      // Resolved before, or pinned by expectedDigest: Degraded keeps (or takes) the digest, so
      // node caches holding it go on serving it; never Failed because a hub is down.
      next = {
        phase: had ? ArtifactPhase.ARTIFACT_PHASE_DEGRADED : ArtifactPhase.ARTIFACT_PHASE_FAILED,
        ...(had && !entry.value.status?.manifestDigest ? { manifestDigest: err.fallbackDigest } : {}),
        reason: err.reason,
        message: err.message,
      };
      this.logger.warn({ artifact: key, reason: err.reason }, `artifact ${key}: ${mode} failed (${err.reason}): ${err.message}`);
    }
    await this.store.artifacts.store.modify(key, (current) => {
      // Deleted meanwhile, or deleted and created again: leave the new record to its own pass.
      if (!current || current.value.uid !== entry.value.uid) return undefined;
      return { ...current.value, status: { ...current.value.status!, ...next, checkedAt, nodes: [] } };
    });
  }
}
