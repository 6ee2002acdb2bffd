/**
 * Model name → replica pool, kept current by a watch on the deployments bucket (the scheduler
 * writes each deployment's status there, with its Ready replicas' endpoints). No polling: a
 * replica turning Ready or going away reaches every router replica in milliseconds.
 *
 * A disaggregated deployment's decode replicas join the model's pool like servers do; its
 * prefill replicas form a pool per deployment (own policy, health and queue), which each of its
 * decode replicas points to: prefill and decode engines of one deployment share a KV layout,
 * those of two deployments need not.
 */
import type { ModelDeployment } from '@gpufleet/contracts';
import type { KvChange } from '@gpufleet/messaging';
import { PassiveHealth, type RoutingPolicy } from '@gpufleet/routing-core';
import { deploymentRoute, type DeploymentRoute } from './model-routes';
import { ReplicaPool } from './replica-pool';

export interface ModelDirectoryOptions {
  /** A fresh policy per model (policies keep per-replica-set state). */
  readonly createPolicy: () => RoutingPolicy;
  readonly createHealth: () => PassiveHealth;
  readonly maxInFlightPerReplica: number;
  readonly queueMax: number;
  readonly queueTimeoutMs: number;
  readonly connectTimeoutMs: number;
}

export class ModelDirectory {
  private readonly routes = new Map<string, DeploymentRoute>();
  private readonly pools = new Map<string, ReplicaPool>();
  /** Deployment key → its prefill replicas (disaggregated deployments only). */
  private readonly prefillPools = new Map<string, ReplicaPool>();
  private sortedModels: string[] = [];

  constructor(private readonly options: ModelDirectoryOptions) {}

  /** The pool serving `model`, or undefined when no deployment serves that name. */
  pool(model: string): ReplicaPool | undefined {
    return this.pools.get(model);
  }

  /** Every served model name, sorted. */
  get models(): readonly string[] {
    return this.sortedModels;
  }

  get allPools(): IterableIterator<ReplicaPool> {
    return this.pools.values();
  }

  /** Every pool: the models' and the disaggregated deployments' prefill pools. */
  *everyPool(): IterableIterator<ReplicaPool> {
    yield* this.pools.values();
    yield* this.prefillPools.values();
  }

  /** The prefill replicas of disaggregated deployment `deployment` (`<namespace>.<name>`). */
  prefillPool(deployment: string): ReplicaPool | undefined {
    return this.prefillPools.get(deployment);
  }

  /** Applies one change of the deployments bucket. */
  apply(change: KvChange<ModelDeployment>): void {
    const before = this.routes.get(change.key);
    const after = change.kind === 'put' ? deploymentRoute(change.key, change.value) : undefined;
    if (after) this.routes.set(change.key, after);
    else this.routes.delete(change.key);
    this.syncPrefill(change.key, after);
    const touched = new Set<string>();
    if (before) touched.add(before.model);
    if (after) touched.add(after.model);
    for (const model of touched) this.rebuild(model);
  }

  close(): void {
    for (const pool of this.pools.values()) pool.close();
    for (const pool of this.prefillPools.values()) pool.close();
    this.pools.clear();
    this.prefillPools.clear();
    this.routes.clear();
    this.sortedModels = [];
  }

  private rebuild(model: string): void {
    const serving = [...this.routes.values()].filter((r) => r.model === model).sort((a, b) => a.deployment.localeCompare(b.deployment));
    let pool = this.pools.get(model);
    if (serving.length === 0) {
      if (pool) {
        pool.setEndpoints([]);
        pool.close();
        this.pools.delete(model);
        this.sortedModels = [...this.pools.keys()].sort();
      }
      return;
    }
    if (!pool) {
      pool = this.newPool(model);
      this.pools.set(model, pool);
      this.sortedModels = [...this.pools.keys()].sort();
    }
    pool.deployments = serving.map((r) => r.deployment);
    pool.desired = serving.reduce((sum, r) => sum + r.desired, 0);
    pool.prefillReady = serving.reduce((sum, r) => sum + r.prefillEndpoints.length, 0);
    pool.prefillDesired = serving.reduce((sum, r) => sum + r.prefillDesired, 0);
    pool.setEndpoints(serving.flatMap((r) => r.endpoints));
    for (const replica of pool.replicas) replica.prefill = replica.role === 'decode' ? this.prefillPools.get(replica.deployment) : undefined;
  }

  /** An empty pool for `model` with this router's policy, health and queue settings. */
  private newPool(model: string): ReplicaPool {
    return new ReplicaPool({
      model,
      policy: this.options.createPolicy(),
      health: this.options.createHealth(),
      maxInFlightPerReplica: this.options.maxInFlightPerReplica,
      queueMax: this.options.queueMax,
      queueTimeoutMs: this.options.queueTimeoutMs,
      connectTimeoutMs: this.options.connectTimeoutMs,
    });
  }

  /** Creates, updates or drops the prefill pool of deployment `key` after a change of its record. */
  private syncPrefill(key: string, route: DeploymentRoute | undefined): void {
    let pool = this.prefillPools.get(key);
    if (pool !== undefined && (route === undefined || !route.disaggregated || pool.model !== route.model)) {
      // In-flight prefills finish: removed replicas close once idle.
      pool.setEndpoints([]);
      pool.close();
      this.prefillPools.delete(key);
      pool = undefined;
    }
    if (route === undefined || !route.disaggregated) return;
    if (pool === undefined) {
      pool = this.newPool(route.model);
      this.prefillPools.set(key, pool);
    }
    pool.deployments = [key];
    pool.desired = route.prefillDesired;
    pool.setEndpoints(route.prefillEndpoints);
  }
}
