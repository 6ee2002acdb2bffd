import { Lease } from '@gpufleet/contracts';
import { KvStore, RevisionConflictError } from './kv-store';

export interface LeaseOptions {
  /** Who we are; written into the lease. */
  holder: string;
  /** The holder rewrites the lease this often. */
  renewEveryMs: number;
  /**
   * A lease whose revision has not moved for this long (by our own monotonic clock) is expired
   * and may be taken over. Measured locally, so clock skew between replicas does not matter.
   * Must be greater than renewEveryMs (the constructor refuses otherwise).
   */
  expireAfterMs: number;
  onAcquired: (term: number) => void | Promise<void>;
  onLost: (why: string) => void;
  onError?: (err: unknown) => void;
}

/**
 * Leader election over one KV key with compare-and-set. At most one holder writes at a time:
 * every renewal is a CAS on the revision we last wrote, so a holder that was taken over learns
 * it at its next renewal and steps down. A standby takes over once the lease has not changed
 * for `expireAfterMs`.
 */
export class LeaderLease {
  private timer?: NodeJS.Timeout;
  private revision = 0;
  private held = false;
  private term = 0;
  private observed?: { revision: number; since: number };
  private stopped = false;
  private lastRenewed = 0;

  constructor(
    private readonly store: KvStore<Lease>,
    private readonly key: string,
    private readonly options: LeaseOptions,
    /** Milliseconds on a monotonic clock: a wall-clock step (NTP, a VM resumed) must not end or stretch a lease. */
    private readonly monotonicMs: () => number = () => performance.now(),
  ) {
    const { renewEveryMs, expireAfterMs } = options;
    if (!(renewEveryMs > 0) || !(expireAfterMs > renewEveryMs)) {
      throw new Error(`lease ${key}: expected 0 < renewEveryMs < expireAfterMs, got renewEveryMs ${renewEveryMs} and expireAfterMs ${expireAfterMs}: the lease would lapse between renewals`);
    }
  }

  get isLeader(): boolean {
    return this.held;
  }

  get currentTerm(): number {
    return this.term;
  }

  start(): void {
    const tick = async () => {
      try {
        await (this.held ? this.renew() : this.tryAcquire());
      } catch (err) {
        this.options.onError?.(err);
      }
      if (!this.stopped) this.timer = setTimeout(tick, this.options.renewEveryMs);
    };
    void tick();
  }

  /** Stops renewing; with `release`, deletes the lease so a standby takes over at once. */
  async stop(release = true): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.held && release) {
      this.held = false;
      await this.store.delete(this.key, this.revision).catch(() => undefined);
    }
  }

  private async tryAcquire(): Promise<void> {
    const now = this.monotonicMs();
    const current = await this.store.get(this.key);
    let term = 1;
    if (current) {
      if (!this.observed || this.observed.revision !== current.revision) {
        this.observed = { revision: current.revision, since: now };
        return; // someone holds it (or just did); wait and see whether it moves
      }
      if (now - this.observed.since < this.options.expireAfterMs) return;
      term = current.value.term + 1;
    }
    const wall = new Date();
    const lease: Lease = { holder: this.options.holder, acquiredAt: wall, renewedAt: wall, term };
    try {
      this.revision = current
        ? await this.store.update(this.key, lease, current.revision)
        : await this.store.create(this.key, lease);
    } catch (err) {
      if (err instanceof RevisionConflictError) return; // another standby won
      throw err;
    }
    this.held = true;
    this.term = term;
    this.lastRenewed = now;
    this.observed = undefined;
    await this.options.onAcquired(term);
  }

  private async renew(): Promise<void> {
    const lease: Lease = { holder: this.options.holder, acquiredAt: undefined, renewedAt: new Date(), term: this.term };
    // Counted from before the write: a standby starts its wait only once it sees the write, so
    // this holder's own deadline always comes first.
    const sentAt = this.monotonicMs();
    try {
      this.revision = await this.store.update(this.key, lease, this.revision);
      this.lastRenewed = sentAt;
    } catch (err) {
      if (err instanceof RevisionConflictError) {
        this.held = false;
        this.options.onLost(`lease ${this.key} was taken over (term ${this.term} ended)`);
        return;
      }
      // Unreachable store: once we could not renew for as long as a standby waits, assume it
      // took over and stop writing.
      if (this.monotonicMs() - this.lastRenewed >= this.options.expireAfterMs) {
        this.held = false;
        this.options.onLost(`could not renew lease ${this.key} for ${this.options.expireAfterMs} ms`);
        return;
      }
      throw err;
    }
  }
}
