/**
 * A multiset of non-negative numbers that answers "largest value present" after removals.
 *
 * Pools keep one per "most on one node" figure (free accelerators, free tokens, free vCPU…):
 * a node leaving must not force a scan over every node of the pool. The maximum is cached and
 * only recomputed, over the distinct values, when its last occurrence is removed; nodes of a
 * pool are nearly identical, so distinct values stay few.
 */
export class CountedValues {
  private readonly counts = new Map<number, number>();
  private cachedMax = 0;
  private maxIsStale = false;

  add(value: number): void {
    this.counts.set(value, (this.counts.get(value) ?? 0) + 1);
    if (!this.maxIsStale && value > this.cachedMax) this.cachedMax = value;
  }

  remove(value: number): void {
    const count = this.counts.get(value);
    if (count === undefined) throw new Error(`CountedValues: removing absent value ${value}`);
    if (count === 1) {
      this.counts.delete(value);
      if (value === this.cachedMax) this.maxIsStale = true;
    } else {
      this.counts.set(value, count - 1);
    }
  }

  /** Largest value present; 0 when empty (every figure tracked here is a non-negative amount). */
  max(): number {
    if (this.maxIsStale) {
      let max = 0;
      for (const value of this.counts.keys()) if (value > max) max = value;
      this.cachedMax = max;
      this.maxIsStale = false;
    }
    return this.cachedMax;
  }

  /** Distinct values with how often each occurs. */
  entries(): IterableIterator<[number, number]> {
    return this.counts.entries();
  }
}
