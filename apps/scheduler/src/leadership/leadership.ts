import { Injectable } from '@nestjs/common';

/** Called with the new term (0: no longer leading) whenever it changes; must not throw. */
export type TermListener = (term: number) => void;

/**
 * The one answer to "is this replica the leader": set by LeaderService from the lease, read by
 * everything that does leader-only work (capacity events, admission, the controllers). It has no
 * dependencies, so any service can inject it without a cycle. Work that starts and stops with
 * the lease follows it through `onChange` (or `followTerm`), not by polling.
 */
@Injectable()
export class Leadership {
  private held = false;
  private termValue = 0;
  private readonly listeners = new Set<TermListener>();

  get isLeader(): boolean {
    return this.held;
  }

  /** The lease term this replica leads in; 0 when it does not lead. */
  get term(): number {
    return this.held ? this.termValue : 0;
  }

  /** LeaderService only: the lease was taken in `term`. */
  acquired(term: number): void {
    const before = this.term;
    this.held = true;
    this.termValue = term;
    this.changed(before);
  }

  /** LeaderService only: the lease was lost or released. */
  lost(): void {
    const before = this.term;
    this.held = false;
    this.changed(before);
  }

  /** Calls `listener` after every change of `term`, synchronously; returns the function that removes it. */
  onChange(listener: TermListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** A check that stays true only while this replica leads in the term it leads in now. */
  stillLeadingThisTerm(): () => boolean {
    const term = this.term;
    return () => this.held && this.termValue === term && term > 0;
  }

  private changed(before: number): void {
    const term = this.term;
    if (term === before) return;
    for (const listener of [...this.listeners]) listener(term);
  }
}

export interface TermWork {
  /** This replica leads from now, in `term`. */
  lead(term: number): void;
  /** It no longer leads in the term `lead` was called with. */
  stepDown(): void;
}

/**
 * Follows the lease term: `lead(term)` when this replica starts leading (at once, if it already
 * does), `stepDown()` when that term ends, before `lead` of a next one. Returns the function that
 * stops following (it does not step down).
 */
export function followTerm(leadership: Leadership, work: TermWork): () => void {
  let leading = 0;
  const follow = (term: number): void => {
    if (term === leading) return;
    if (leading !== 0) work.stepDown();
    leading = term;
    if (term !== 0) work.lead(term);
  };
  const off = leadership.onChange(follow);
  follow(leadership.term);
  return off;
}
