import { Injectable } from '@nestjs/common';

/**
 * The one answer to "is this replica the leader": set by LeaderService from the lease, read by
 * everything that does leader-only work (capacity events, admission, the controllers). It has no
 * dependencies, so any service can inject it without a cycle.
 */
@Injectable()
export class Leadership {
  private held = false;
  private termValue = 0;

  get isLeader(): boolean {
    return this.held;
  }

  /** The lease term this replica leads in; 0 when it does not lead. */
  get term(): number {
    return this.held ? this.termValue : 0;
  }

  /** LeaderService only: the lease was taken in `term`. */
  acquired(term: number): void {
    this.held = true;
    this.termValue = term;
  }

  /** LeaderService only: the lease was lost or released. */
  lost(): void {
    this.held = false;
  }

  /** A check that stays true only while this replica leads in the term it leads in now. */
  stillLeadingThisTerm(): () => boolean {
    const term = this.term;
    return () => this.held && this.termValue === term && term > 0;
  }
}
