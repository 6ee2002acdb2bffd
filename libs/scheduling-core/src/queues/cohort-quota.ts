/**
 * Quota arithmetic of a cohort, in credits (Kueue's model, one resource).
 *
 * Each member q has nominal N, usage U (credits of its admitted and being-admitted workloads),
 * an optional borrowingLimit B and lendingLimit L:
 *   lendable(q)   = min(L ?? N, N)          what q puts into the cohort's shared pool
 *   guaranteed(q) = N − lendable(q)         what only q may ever use
 *   shared(q)     = max(0, U − guaranteed)  what q takes from the shared pool (its own lendable
 *                                           part counts too: lent credits are reclaimable)
 * The cohort admits w more credits into q iff
 *   U + w ≤ N + (B ?? ∞)                                           (q's borrowing limit)
 *   Σ shared(p) − shared(q) + max(0, U + w − guaranteed) ≤ Σ lendable(p)   (the shared pool)
 * which keeps, at all times: Σ U ≤ Σ N (the cohort never exceeds its nominal total), and the
 * other members together never use more than L of q's nominal quota. A queue without a cohort
 * is a cohort of one: the same rules reduce to U + w ≤ N.
 */

export interface QuotaTerms {
  readonly nominal: number;
  /** Infinity when unlimited. */
  readonly borrowingLimit: number;
  readonly lendable: number;
  readonly guaranteed: number;
}

export function quotaTerms(nominal: number, borrowingLimit: number | undefined, lendingLimit: number | undefined, inCohort: boolean): QuotaTerms {
  const lendable = inCohort ? Math.min(lendingLimit ?? nominal, nominal) : nominal;
  return {
    nominal,
    borrowingLimit: inCohort ? (borrowingLimit ?? Number.POSITIVE_INFINITY) : 0,
    lendable,
    guaranteed: nominal - lendable,
  };
}

export function sharedUse(terms: QuotaTerms, usage: number): number {
  return Math.max(0, usage - terms.guaranteed);
}

/**
 * The most credits q can take now: min(N + B − U, max(0, guaranteed − U) + free shared pool).
 * `cohortFree` is Σ lendable − Σ shared over the cohort.
 */
export function headroom(terms: QuotaTerms, usage: number, cohortFree: number): number {
  const byBorrowingLimit = terms.nominal + terms.borrowingLimit - usage;
  const byCohort = Math.max(0, terms.guaranteed - usage) + cohortFree;
  return Math.max(0, Math.min(byBorrowingLimit, byCohort));
}

/** The most q could ever hold, with every other member idle. */
export function ceiling(terms: QuotaTerms, cohortLendable: number): number {
  return Math.min(terms.nominal + terms.borrowingLimit, terms.guaranteed + cohortLendable);
}
