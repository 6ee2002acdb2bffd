import { checkInteger } from '../errors';
import type { ReplicaView } from '../replica';
import { Clock, systemClock } from './clock';

/**
 * How an attempt on a replica ended, as passive health counts it:
 * - `ok`: the replica answered (any status below 500, a 4xx included: the client's fault);
 * - `connect_error`: no connection, or it dropped before a response;
 * - `server_error`: a 5xx status;
 * - `cancelled`: the client went away first; says nothing about the replica.
 */
export type AttemptOutcome = 'ok' | 'connect_error' | 'server_error' | 'cancelled';

/** The outcome of a response with this HTTP status. */
export function outcomeOfStatus(status: number): AttemptOutcome {
  return status >= 500 ? 'server_error' : 'ok';
}

export interface PassiveHealthOptions {
  /** Consecutive failures (connect errors or 5xx) that eject a healthy replica. Default 3. */
  readonly consecutiveFailures?: number;
  /** First ejection's cool-down, ms; each further ejection in a row doubles it. Default 5000. */
  readonly baseEjectionMs?: number;
  /** Longest cool-down, ms. Default 60000. */
  readonly maxEjectionMs?: number;
}

export type ReplicaHealthState = 'healthy' | 'ejected' | 'half_open';

export interface ReplicaHealth {
  readonly state: ReplicaHealthState;
  readonly consecutiveFailures: number;
  /** Ejections since the replica last succeeded; sets the next cool-down. */
  readonly ejections: number;
  /** While ejected: when it re-enters (ms since the epoch). */
  readonly ejectedUntil?: number;
}

interface Entry {
  failures: number;
  ejections: number;
  /** 0 when not ejected. */
  ejectedUntil: number;
}

/**
 * Passive outlier ejection from the router's own traffic, like Envoy's consecutive-5xx
 * detection: no probes, so a replica is judged only by requests it was sent anyway.
 *
 * - healthy: `consecutiveFailures` failures in a row eject it for base × 2^(ejections) ms,
 *   capped at maxEjectionMs;
 * - ejected: no policy picks it until the cool-down ends;
 * - half_open: back in rotation after its cool-down; one success makes it healthy and forgets
 *   its ejections, one failure ejects it again for twice as long.
 * Outcomes that arrive while a replica is ejected are ignored. Time is read only from the
 * injected clock; a replica re-enters lazily, when next asked about.
 */
export class PassiveHealth {
  private readonly threshold: number;
  private readonly baseMs: number;
  private readonly maxMs: number;
  private readonly entries = new Map<string, Entry>();

  constructor(
    options: PassiveHealthOptions = {},
    private readonly clock: Clock = systemClock,
    field = 'passiveHealth',
  ) {
    this.threshold = checkInteger(`${field}.consecutiveFailures`, options.consecutiveFailures ?? 3, 1);
    this.baseMs = checkInteger(`${field}.baseEjectionMs`, options.baseEjectionMs ?? 5_000, 1);
    this.maxMs = checkInteger(`${field}.maxEjectionMs`, options.maxEjectionMs ?? 60_000, this.baseMs);
  }

  /** Counts one finished attempt. */
  record(replicaId: string, outcome: AttemptOutcome): void {
    if (outcome === 'cancelled') return;
    const existing = this.entries.get(replicaId);
    // While ejected, answers are from requests sent before the ejection: the cool-down runs its
    // course either way (a replica can finish old streams yet refuse new connections).
    if (existing !== undefined && existing.ejectedUntil > this.clock.now()) return;
    if (outcome === 'ok') {
      // One success resets everything, from half-open or from a run of failures.
      this.entries.delete(replicaId);
      return;
    }
    const entry = existing ?? { failures: 0, ejections: 0, ejectedUntil: 0 };
    this.entries.set(replicaId, entry);
    const now = this.clock.now();
    entry.failures++;
    const halfOpen = entry.ejections > 0;
    if (halfOpen || entry.failures >= this.threshold) {
      entry.ejectedUntil = now + Math.min(this.baseMs * 2 ** entry.ejections, this.maxMs);
      entry.ejections++;
      entry.failures = 0;
    }
  }

  /** Whether no policy may pick the replica now. */
  isEjected(replicaId: string): boolean {
    const entry = this.entries.get(replicaId);
    return entry !== undefined && entry.ejectedUntil > this.clock.now();
  }

  health(replicaId: string): ReplicaHealth {
    const entry = this.entries.get(replicaId);
    if (entry === undefined) return { state: 'healthy', consecutiveFailures: 0, ejections: 0 };
    const { failures, ejections, ejectedUntil } = entry;
    if (ejectedUntil > this.clock.now()) return { state: 'ejected', consecutiveFailures: failures, ejections, ejectedUntil };
    return { state: ejections > 0 ? 'half_open' : 'healthy', consecutiveFailures: failures, ejections };
  }

  /** The views with `ejected` set from passive health (and kept where the caller set it). */
  apply<V extends ReplicaView>(replicas: readonly V[]): V[] {
    return replicas.map((r) => (!r.ejected && this.isEjected(r.id) ? { ...r, ejected: true } : r));
  }

  /** Forgets a replica that left the deployment. */
  removeReplica(replicaId: string): void {
    this.entries.delete(replicaId);
  }
}
