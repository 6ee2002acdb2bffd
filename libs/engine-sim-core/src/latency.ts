/**
 * The latency model of the simulated engine.
 *
 *     prefill (ms)    = prefillUsPerToken × uncached prompt tokens / 1000 × load × jitter
 *     TTFT            = queue wait + prefill
 *     inter-token     = itlMs × load × jitter            (every token after the first)
 *     load(running)   = 1 + loadSlowdown × (running − 1) / (maxNumSeqs − 1)
 *     jitter          = 1 + latencyJitter × u,  u uniform in [−1, 1) from the seeded generator
 *     KV transfer     = kvTransferUsPerBlock × blocks pulled / 1000 × jitter   (disaggregated decode)
 *
 * So a lone request sees the configured figures, a full batch (`running = maxNumSeqs`) sees them
 * `1 + loadSlowdown` times slower, and prompt tokens found in the prefix cache cost nothing.
 */
import { Rng } from './hash';

export interface LatencySettings {
  /** µs of prefill per uncached prompt token. */
  readonly prefillUsPerToken: number;
  /** ms between output tokens. */
  readonly itlMs: number;
  /** How much slower prefill and decode are with a full batch: 0.5 = 50 % slower. */
  readonly loadSlowdown: number;
  /** 0-1: relative spread of every duration around its model value. */
  readonly latencyJitter: number;
  readonly maxNumSeqs: number;
  /** µs to pull one KV block from a remote prefill engine (disaggregated decode); default 0. */
  readonly kvTransferUsPerBlock?: number;
}

export class LatencyModel {
  private readonly rng: Rng;

  constructor(
    readonly settings: LatencySettings,
    seed = 0,
  ) {
    this.rng = new Rng(seed ^ 0x5bd1e995);
  }

  /** ≥ 1: how much slower each step is with `running` requests in the batch. */
  loadFactor(running: number): number {
    const { loadSlowdown, maxNumSeqs } = this.settings;
    if (loadSlowdown === 0 || maxNumSeqs <= 1 || running <= 1) return 1;
    return 1 + (loadSlowdown * (Math.min(running, maxNumSeqs) - 1)) / (maxNumSeqs - 1);
  }

  /** ms to prefill `uncachedTokens` with `running` requests in the batch. */
  prefillMs(uncachedTokens: number, running: number): number {
    if (this.settings.prefillUsPerToken === 0 || uncachedTokens <= 0) return 0;
    return ((this.settings.prefillUsPerToken * uncachedTokens) / 1000) * this.loadFactor(running) * this.jitter();
  }

  /** ms from one output token to the next with `running` requests in the batch. */
  interTokenMs(running: number): number {
    if (this.settings.itlMs === 0) return 0;
    return this.settings.itlMs * this.loadFactor(running) * this.jitter();
  }

  /** ms to pull `blocks` KV blocks from a remote prefill engine; the batch does not slow it. */
  kvTransferMs(blocks: number): number {
    const us = this.settings.kvTransferUsPerBlock ?? 0;
    if (us === 0 || blocks <= 0) return 0;
    return ((us * blocks) / 1000) * this.jitter();
  }

  private jitter(): number {
    const spread = this.settings.latencyJitter;
    return spread === 0 ? 1 : 1 + spread * (this.rng.float() * 2 - 1);
  }
}
