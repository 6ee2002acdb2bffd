/**
 * The replicas serving one model name, as this router sees them: the ready endpoints from the
 * deployments store, what this router has in flight on each, passive health, the routing policy
 * and the bounded queue of requests waiting for a replica below MAX_INFLIGHT_PER_REPLICA. A
 * disaggregated deployment's prefill replicas form a pool of their own (one per deployment),
 * which its decode replicas point to.
 */
import { PassiveHealth, type ReplicaView, type RoutingPolicy } from '@gpufleet/routing-core';
import { Upstream } from '../proxy/upstream';
import type { ReadyEndpoint } from './model-routes';

/** One engine endpoint; a ReplicaView whose `inFlight` and `ejected` this pool keeps current. */
export class Replica implements ReplicaView {
  inFlight = 0;
  ejected = false;
  /** Left the deployment: its agent closes once its last request finishes. */
  removed = false;
  /** `server`, `decode` or `prefill`. */
  role = 'server';
  /**
   * A decode replica's prefill replicas (its deployment's): a request is prefilled there first.
   * Undefined for replicas that answer whole requests.
   */
  prefill: ReplicaPool | undefined = undefined;
  /**
   * Engine load, kept by EngineMetricsPoller: the engine's last fresh /metrics sample, with this
   * router's in-flight count when it arrived; undefined when none is fresh (policies then use
   * `inFlight` alone).
   */
  engineLoad: ReplicaView['engineLoad'] = undefined;
  /** The keep-alive connections to the engine. */
  readonly upstream: Upstream;

  constructor(
    readonly id: string,
    public deployment: string,
    connectTimeoutMs: number,
  ) {
    this.upstream = new Upstream(id, { connectTimeoutMs });
  }

  close(): void {
    this.upstream.close();
  }
}

export interface ReplicaPoolOptions {
  readonly model: string;
  readonly policy: RoutingPolicy;
  readonly health: PassiveHealth;
  /** 0: no limit. */
  readonly maxInFlightPerReplica: number;
  readonly queueMax: number;
  readonly queueTimeoutMs: number;
  /** CONNECT_TIMEOUT_S, for new replicas' connections. */
  readonly connectTimeoutMs: number;
}

/** Why a request got no replica. */
export type AcquireFailure = 'no_replica' | 'queue_full' | 'queue_timeout';

interface Waiter {
  readonly onReady: () => void;
  readonly onFail: (reason: AcquireFailure) => void;
  timer: NodeJS.Timeout | undefined;
  done: boolean;
}

export class ReplicaPool {
  readonly model: string;
  readonly policy: RoutingPolicy;
  readonly health: PassiveHealth;
  private readonly cap: number;
  private readonly queueMax: number;
  private readonly queueTimeoutMs: number;
  private readonly connectTimeoutMs: number;
  private byId = new Map<string, Replica>();
  private list: Replica[] = [];
  private readonly waiters: Waiter[] = [];
  private waiterHead = 0;
  /** Deployments whose replicas are in this pool (a model name may be served by several). */
  deployments: readonly string[] = [];
  desired = 0;
  /** Ready and wanted prefill replicas of the disaggregated deployments among them (error messages). */
  prefillReady = 0;
  prefillDesired = 0;

  constructor(options: ReplicaPoolOptions) {
    this.model = options.model;
    this.policy = options.policy;
    this.health = options.health;
    this.cap = options.maxInFlightPerReplica;
    this.queueMax = options.queueMax;
    this.queueTimeoutMs = options.queueTimeoutMs;
    this.connectTimeoutMs = options.connectTimeoutMs;
  }

  get replicas(): readonly Replica[] {
    return this.list;
  }

  get readyCount(): number {
    return this.list.length;
  }

  get queued(): number {
    return this.waiters.length - this.waiterHead;
  }

  /** Replaces the replica set; replicas that stay keep their in-flight counts and health. */
  setEndpoints(endpoints: readonly ReadyEndpoint[]): void {
    const next = new Map<string, Replica>();
    for (const e of endpoints) {
      let replica = this.byId.get(e.endpoint);
      if (replica === undefined) replica = new Replica(e.endpoint, e.deployment, this.connectTimeoutMs);
      else replica.deployment = e.deployment;
      replica.role = e.role;
      next.set(e.endpoint, replica);
    }
    for (const [id, replica] of this.byId) {
      if (next.has(id)) continue;
      replica.removed = true;
      this.policy.removeReplica(id);
      this.health.removeReplica(id);
      if (replica.inFlight === 0) replica.close();
    }
    this.byId = next;
    this.list = [...next.values()];
    if (this.list.length === 0) this.failWaiters('no_replica');
    else this.wakeWaiters();
  }

  /**
   * Sets each replica's `ejected` for the next pick: out when passive health ejected it or it
   * is at MAX_INFLIGHT_PER_REPLICA. When health has ejected every replica, health is ignored
   * (as Envoy's panic threshold does): an answer from a doubtful replica beats a certain 503.
   * Returns whether any replica can be picked.
   */
  refresh(): boolean {
    const list = this.list;
    let healthy = 0;
    for (const r of list) {
      r.ejected = this.health.isEjected(r.id);
      if (!r.ejected) healthy++;
    }
    const panic = healthy === 0;
    let available = 0;
    for (const r of list) {
      if (panic) r.ejected = false;
      if (this.cap > 0 && r.inFlight >= this.cap) r.ejected = true;
      if (!r.ejected) available++;
    }
    return available > 0;
  }

  /**
   * Calls `onReady` (synchronously when a replica is free now) once the caller may pick from
   * `replicas` after `refresh()`, or `onFail` when the queue is full, the wait too long, or the
   * model lost its replicas. Returns a function that withdraws a waiting request.
   */
  whenAvailable(onReady: () => void, onFail: (reason: AcquireFailure) => void): (() => void) | undefined {
    if (this.list.length === 0) {
      onFail('no_replica');
      return undefined;
    }
    // Earlier waiters go first (this also drops withdrawn ones from the head).
    if (this.queued > 0) this.wakeWaiters();
    if (this.queued === 0 && this.refresh()) {
      onReady();
      return undefined;
    }
    if (this.queued >= this.queueMax) {
      onFail('queue_full');
      return undefined;
    }
    const waiter: Waiter = { onReady, onFail, timer: undefined, done: false };
    waiter.timer = setTimeout(() => {
      if (waiter.done) return;
      waiter.done = true;
      onFail('queue_timeout');
    }, this.queueTimeoutMs);
    this.waiters.push(waiter);
    return () => {
      if (waiter.done) return;
      waiter.done = true;
      clearTimeout(waiter.timer);
    };
  }

  /** Counts a request in flight on `replica`. */
  acquire(replica: Replica): void {
    replica.inFlight++;
  }

  /** A request on `replica` finished: it may take a waiting one. */
  release(replica: Replica): void {
    replica.inFlight--;
    if (replica.removed) {
      if (replica.inFlight === 0) replica.close();
      return;
    }
    if (this.waiters.length > this.waiterHead) this.wakeWaiters();
  }

  /** Closes every connection (shutdown). */
  close(): void {
    this.failWaiters('no_replica');
    for (const replica of this.list) replica.close();
  }

  private wakeWaiters(): void {
    while (this.waiterHead < this.waiters.length) {
      const waiter = this.waiters[this.waiterHead];
      if (!waiter.done) {
        if (!this.refresh()) break;
        waiter.done = true;
        clearTimeout(waiter.timer);
        this.shift();
        // The waiter picks and counts itself in flight before the next one is considered.
        waiter.onReady();
        continue;
      }
      this.shift();
    }
  }

  private shift(): void {
    this.waiterHead++;
    if (this.waiterHead > 1024 && this.waiterHead * 2 > this.waiters.length) {
      this.waiters.splice(0, this.waiterHead);
      this.waiterHead = 0;
    } else if (this.waiterHead === this.waiters.length) {
      this.waiters.length = 0;
      this.waiterHead = 0;
    }
  }

  private failWaiters(reason: AcquireFailure): void {
    const pending = this.waiters.slice(this.waiterHead);
    this.waiters.length = 0;
    this.waiterHead = 0;
    for (const waiter of pending) {
      if (waiter.done) continue;
      waiter.done = true;
      clearTimeout(waiter.timer);
      waiter.onFail(reason);
    }
  }
}
