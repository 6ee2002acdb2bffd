/**
 * What a routing policy sees of one ready replica of a model deployment. The router builds
 * these views from its own in-flight counters, the engines' metrics and passive health.
 */
export interface ReplicaView {
  readonly id: string;
  /** Requests this router has sent to the replica and not yet seen finish. */
  readonly inFlight: number;
  /** Requests waiting in the engine's queue, from its metrics (vLLM `num_requests_waiting`). */
  readonly queued?: number;
  /** Fraction of the engine's KV cache in use, 0-1, from its metrics. */
  readonly kvCacheUsage?: number;
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

