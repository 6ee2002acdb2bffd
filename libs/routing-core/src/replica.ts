import type { EngineLoad } from './engine-load';

/**
 * What a routing policy sees of one ready replica of a model deployment. The router builds
 * these views from its own in-flight counters, the engines' metrics and passive health.
 */
export interface ReplicaView {
  readonly id: string;
  /** Requests this router has sent to the replica and not yet seen finish. */
  readonly inFlight: number;
  /**
   * The engine's own count of running and waiting requests and its KV cache usage, from its last
   * fresh `/metrics` sample; undefined when there is none (not polled, failing, or stale).
   * Policies balance on `effectiveLoad`, which adds the requests of other routers it reveals.
   */
  readonly engineLoad?: EngineLoad | undefined;
  /** Passive health took it out of rotation; no policy picks it. */
  readonly ejected: boolean;
}

/** What a routing policy sees of one OpenAI-compatible request. */
export interface RouteRequest {
  /** The `model` the client asked for: cache state is kept per model (base or adapter). */
  readonly model: string;
  /** The prompt as text (chat messages rendered in order), for prefix matching. */
  readonly text: string;
  /** The session-affinity header value, when the client sent one. */
  readonly sessionKey?: string;
}

