import type { ReplicaView } from '../replica';

/** What an engine's `/metrics` says about its load at one moment (see parseEngineMetrics). */
export interface EngineLoadSample {
  /** Requests in the engine's running batch, summed over its schedulers (vLLM engines, SGLang data-parallel ranks). */
  readonly running: number;
  /** Requests queued in the engine for a batch slot or KV blocks, summed the same way. */
  readonly waiting: number;
  /** Fraction 0-1 of the KV cache in use (the fullest scheduler's); undefined when the engine reports none (TGI). */
  readonly kvCacheUsage?: number | undefined;
}

/** A sample as a routing policy sees it: tied to this router's own count when it was taken. */
export interface EngineLoad extends EngineLoadSample {
  /**
   * Requests this router had in flight on the replica when the sample arrived: the part of
   * `running + waiting` that was its own. The rest came from other routers (or clients that
   * bypass routers).
   */
  readonly inFlightAtSample: number;
}

/** KV cache usage from which an engine is about to preempt requests: any replica below it is lighter. */
export const KV_CACHE_SATURATED = 0.98;

/**
 * The replica's load for balancing: this router's live in-flight count plus the requests other
 * routers had there at the last sample, `inFlight + max(0, running + waiting - inFlightAtSample)`.
 * Without a (fresh) sample, just `inFlight`: whoever fills `engineLoad` clears it once stale.
 * The own part stays live (it changes with every request), the others' part is as old as the
 * sample (one ENGINE_METRICS_INTERVAL_S at most).
 */
export function effectiveLoad(replica: ReplicaView): number {
  const engine = replica.engineLoad;
  if (engine === undefined) return replica.inFlight;
  const others = engine.running + engine.waiting - engine.inFlightAtSample;
  return others > 0 ? replica.inFlight + others : replica.inFlight;
}

/** Whether the replica's engine reported its KV cache (nearly) full: new requests there would preempt others. */
export function kvSaturated(replica: ReplicaView): boolean {
  const usage = replica.engineLoad?.kvCacheUsage;
  return usage !== undefined && usage >= KV_CACHE_SATURATED;
}
