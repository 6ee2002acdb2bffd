import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  OnApplicationBootstrap,
  OnApplicationShutdown,
  OnModuleInit,
} from '@nestjs/common';
import type Redis from 'ioredis';
import type { NatsConnection } from 'nats';
import { ApiKeyRecord, Buckets, ModelDeployment, RedisKeys } from '@gpufleet/contracts';
import { AccessDirectory } from '@gpufleet/access-core';
import { AccessMirror, EventBus, KvMirror, KvStore, NATS_CONNECTION } from '@gpufleet/messaging';
import { LOGGER, METRICS_REGISTRY, Readiness, type Logger, type Registry } from '@gpufleet/observability';
import { createRoutingPolicy, PassiveHealth, type RoutingPolicyConfig } from '@gpufleet/routing-core';
import { ROUTER_CONFIG, type RouterConfig } from './config';
import { EngineMetricsPoller } from './deployments/engine-metrics-poller';
import { ModelDirectory } from './deployments/model-directory';
import { KeyRegistry } from './keys/key-registry';
import { RateLimiter } from './limits/rate-limiter';
import { UsageMeter } from './metering/usage-meter';
import { RouterMetrics } from './metrics/router-metrics';
import { RouterServer } from './proxy/router.server';
import { REDIS } from './redis';

/** The routing policy configuration from the ROUTING_POLICY variables. */
export function routingPolicyConfig(config: RouterConfig): RoutingPolicyConfig {
  if (config.ROUTING_POLICY !== 'cache_aware') return { policy: config.ROUTING_POLICY };
  return {
    policy: 'cache_aware',
    cacheThreshold: config.CACHE_THRESHOLD,
    balanceAbsThreshold: config.BALANCE_ABS_THRESHOLD,
    balanceRelThreshold: config.BALANCE_REL_THRESHOLD,
    maxCharsPerReplica: config.PREFIX_CHARS_PER_REPLICA,
  };
}

/**
 * The router's moving parts, tied to the Nest lifecycle: the deployments and api-keys watches
 * (loaded before the API opens), the Redis-backed limiter and meter, the poller of the engines'
 * /metrics (their load, for the policies) and the raw HTTP server on HTTP_PORT. Shutdown: readiness turns 503, the API drains, the meter flushes, then NATS and
 * Redis close.
 */
@Injectable()
export class RouterRuntime implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  readonly directory: ModelDirectory;
  readonly keys: KeyRegistry;
  /** Users, tokens and role bindings: who may call KeyService (the admin role). */
  readonly access: AccessDirectory;
  private accessMirror: AccessMirror | undefined;
  readonly metrics: RouterMetrics;
  readonly limiter: RateLimiter;
  readonly meter: UsageMeter;
  readonly engineMetrics: EngineMetricsPoller;
  readonly server: RouterServer;
  private keyStore: KvStore<ApiKeyRecord> | undefined;
  private readonly mirrors: Array<KvMirror<unknown>> = [];
  /** The port the API listens on (HTTP_PORT, or the one bound for 0). */
  port = 0;

  constructor(
    @Inject(ROUTER_CONFIG) private readonly config: RouterConfig,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    events: EventBus,
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(METRICS_REGISTRY) registry: Registry,
    private readonly readiness: Readiness,
  ) {
    const policy = routingPolicyConfig(config);
    this.directory = new ModelDirectory({
      createPolicy: () => createRoutingPolicy(policy, 'ROUTING_POLICY'),
      createHealth: () =>
        new PassiveHealth({
          consecutiveFailures: config.EJECT_CONSECUTIVE_FAILURES,
          baseEjectionMs: Math.round(config.EJECT_BASE_S * 1000),
          maxEjectionMs: Math.round(config.EJECT_MAX_S * 1000),
        }),
      maxInFlightPerReplica: config.MAX_INFLIGHT_PER_REPLICA,
      queueMax: config.QUEUE_MAX,
      queueTimeoutMs: config.QUEUE_TIMEOUT_S * 1000,
      connectTimeoutMs: config.CONNECT_TIMEOUT_S * 1000,
    });
    this.keys = new KeyRegistry(config.AUTH_REQUIRED);
    this.access = new AccessDirectory(config.GPUFLEET_ADMIN_TOKEN);
    this.metrics = new RouterMetrics(registry, this.directory, () => this.keys.size);
    this.limiter = new RateLimiter(redis, { prefix: RedisKeys.rateLimitPrefix(config.GPUFLEET_CLUSTER) });
    this.meter = new UsageMeter({
      redis,
      events,
      metrics: this.metrics,
      logger,
      cluster: config.GPUFLEET_CLUSTER,
      router: config.ROUTER_NAME,
      flushMs: config.USAGE_FLUSH_S * 1000,
      retentionDays: config.USAGE_RETENTION_DAYS,
    });
    this.engineMetrics = new EngineMetricsPoller({
      directory: this.directory,
      metrics: this.metrics,
      logger,
      intervalMs: config.ENGINE_METRICS_INTERVAL_S * 1000,
      timeoutMs: config.ENGINE_METRICS_TIMEOUT_S * 1000,
      maxBodyBytes: config.ENGINE_METRICS_MAX_KIB * 1024,
      headers: config.UPSTREAM_API_KEY ? { authorization: `Bearer ${config.UPSTREAM_API_KEY}` } : undefined,
    });
    this.server = new RouterServer({
      config,
      directory: this.directory,
      keys: this.keys,
      limiter: this.limiter,
      meter: this.meter,
      metrics: this.metrics,
      logger,
      cacheAware: policy.policy === 'cache_aware',
      requestTimeoutMs: config.REQUEST_TIMEOUT_S * 1000,
      readiness: () => this.readiness.evaluate(),
    });
    redis.on('error', (err: Error) => logger.debug({ err }, `redis: ${err.message}`));
  }

  /** The api-keys bucket (KeyService writes it). */
  get apiKeys(): KvStore<ApiKeyRecord> {
    if (this.keyStore === undefined) throw new Error('the api-keys bucket is not open yet');
    return this.keyStore;
  }

  async onModuleInit(): Promise<void> {
    const cluster = this.config.GPUFLEET_CLUSTER;
    const js = this.nc.jetstream();
    const [deployments, keys] = await Promise.all([KvStore.open(js, Buckets.deployments(cluster), ModelDeployment), KvStore.open(js, Buckets.apiKeys(cluster), ApiKeyRecord)]);
    this.keyStore = keys;
    // The directory and the registry keep their own derived state; the mirrors feed them every
    // change, the initial content included (listeners are registered before the watch starts).
    const deploymentsMirror = new KvMirror(deployments, { logger: this.logger });
    const keysMirror = new KvMirror(keys, { logger: this.logger });
    deploymentsMirror.listen((_key, change) => this.directory.apply(change));
    keysMirror.listen((_key, change) => this.keys.apply(change));
    this.mirrors.push(deploymentsMirror as KvMirror<unknown>, keysMirror as KvMirror<unknown>);
    let loaded = false;
    this.readiness.register({
      name: 'store',
      check: () => {
        if (!loaded) throw new Error('deployments and API keys not loaded yet');
      },
    });
    if (!this.config.RATE_LIMIT_FAIL_OPEN) {
      this.readiness.register({
        name: 'redis',
        check: () => {
          if (this.redis.status !== 'ready') throw new Error(`redis ${this.redis.status} (RATE_LIMIT_FAIL_OPEN=false: no request passes unchecked)`);
        },
      });
    }
    const [accessMirror] = await Promise.all([AccessMirror.open(js, cluster, this.access, this.logger), deploymentsMirror.start(), keysMirror.start()]);
    this.accessMirror = accessMirror;
    loaded = true;
    this.meter.start();
    this.engineMetrics.start();
  }

  async onApplicationBootstrap(): Promise<void> {
    this.port = await this.server.listen(this.config.HTTP_PORT, this.config.HOST);
    this.logger.info(
      { port: this.port, policy: this.config.ROUTING_POLICY, models: this.directory.models, keys: this.keys.size },
      `OpenAI API listening on ${this.config.HOST}:${this.port} (routing ${this.config.ROUTING_POLICY}, ${this.directory.models.length} models, auth ${this.config.AUTH_REQUIRED ? 'required' : 'optional'})`,
    );
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.readiness.markShuttingDown('draining');
    const inFlight = this.server.inFlight;
    if (inFlight > 0) this.logger.info({ inFlight }, `draining: finishing ${inFlight} requests in flight`);
    const { unfinished } = await this.server.drain(this.config.DRAIN_TIMEOUT_S * 1000);
    if (unfinished > 0) this.logger.warn({ unfinished }, `drain timeout (DRAIN_TIMEOUT_S=${this.config.DRAIN_TIMEOUT_S}): ${unfinished} requests cut off`);
    await this.meter.stop();
  }

  async onApplicationShutdown(): Promise<void> {
    for (const mirror of this.mirrors) mirror.stop();
    this.accessMirror?.stop();
    this.engineMetrics.stop();
    this.directory.close();
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
