/**
 * Device health with hysteresis. A card turns Unhealthy after `unhealthyAfter` consecutive bad
 * observations, or at once on a fatal XID; it turns Healthy again after `healthyAfter`
 * consecutive good ones, so a card that recovers (a GPU reset, a probe passing again) comes back
 * without restarting the agent.
 */

/** XIDs caused by the application, not the card (NVIDIA's plugin skips the same): no effect on health. */
export const APPLICATION_XIDS: ReadonlySet<number> = new Set([13, 31, 43, 45, 68, 109]);

/**
 * XIDs after which the card cannot be trusted until it is reset: double-bit ECC (48), row
 * remapping failure (63, 64), NVLink error (74), fallen off the bus (79), contained/uncontained
 * ECC (94, 95), GSP errors (119, 120), and the like.
 */
export const FATAL_XIDS: ReadonlySet<number> = new Set([48, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140]);

export type HealthObservation =
  /** The card answered its probe (or showed up in a detection pass). */
  | { readonly ok: true }
  /** A failed probe, a card missing from a detection pass, or an XID event. */
  | { readonly ok: false; readonly xid?: number; readonly reason?: string };

export interface HealthOptions {
  /** Consecutive bad observations that turn a Healthy card Unhealthy (≥ 1). */
  readonly unhealthyAfter: number;
  /** Consecutive good observations that turn an Unhealthy card Healthy (≥ 1). */
  readonly healthyAfter: number;
}

export const DEFAULT_HEALTH: HealthOptions = Object.freeze({ unhealthyAfter: 3, healthyAfter: 3 });

interface CardHealth {
  healthy: boolean;
  bad: number;
  good: number;
  reason?: string;
}

export class DeviceHealth {
  private readonly cards = new Map<string, CardHealth>();

  constructor(private readonly options: HealthOptions = DEFAULT_HEALTH) {
    for (const [name, value] of Object.entries(options)) {
      if (!Number.isInteger(value) || value < 1) throw new Error(`health option ${name} must be a positive integer, got ${value}`);
    }
  }

  /** Cards never observed are Healthy. */
  isHealthy(card: string): boolean {
    return this.cards.get(card)?.healthy ?? true;
  }

  /** Why a card is Unhealthy (the last bad observation), when it is. */
  reasonOf(card: string): string | undefined {
    const state = this.cards.get(card);
    return state && !state.healthy ? state.reason : undefined;
  }

  /** Records one observation; true when the card's health changed. */
  observe(card: string, observation: HealthObservation): boolean {
    let state = this.cards.get(card);
    if (!state) this.cards.set(card, (state = { healthy: true, bad: 0, good: 0 }));
    if (observation.ok) {
      state.good++;
      state.bad = 0;
      if (!state.healthy && state.good >= this.options.healthyAfter) {
        state.healthy = true;
        state.reason = undefined;
        return true;
      }
      return false;
    }
    if (observation.xid !== undefined && APPLICATION_XIDS.has(observation.xid)) return false;
    state.bad++;
    state.good = 0;
    const fatal = observation.xid !== undefined && FATAL_XIDS.has(observation.xid);
    if (state.healthy && (fatal || state.bad >= this.options.unhealthyAfter)) {
      state.healthy = false;
      state.reason = observation.reason ?? (observation.xid !== undefined ? `XID ${observation.xid}` : 'probe failed');
      return true;
    }
    return false;
  }

  forget(card: string): void {
    this.cards.delete(card);
  }
}
