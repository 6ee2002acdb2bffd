/**
 * Per pool, a counter that moves whenever devices may have been freed (a release, a node that
 * turned Ready, a reloaded ledger), and the request shapes that failed to place since it last
 * moved. Commits only take devices away, so a shape that failed keeps failing until the epoch
 * moves: identical pending workloads do not ask the Placer again.
 */
import type { PlacementFailure } from '../placer';

export type CachedFailure = { readonly ok: false } & PlacementFailure;

export class DeviceEpochs {
  private readonly epochs = new Map<string, number>();
  private readonly failed = new Map<string, { epoch: number; byShape: Map<string, CachedFailure> }>();

  epoch(pool: string): number {
    return this.epochs.get(pool) ?? 0;
  }

  /** Devices of the pool may have been freed: earlier placement failures are stale. */
  advance(pool: string): void {
    this.epochs.set(pool, this.epoch(pool) + 1);
  }

  failureOf(pool: string, shape: string): CachedFailure | undefined {
    const entry = this.failed.get(pool);
    return entry && entry.epoch === this.epoch(pool) ? entry.byShape.get(shape) : undefined;
  }

  remember(pool: string, shape: string, failure: PlacementFailure): void {
    const epoch = this.epoch(pool);
    let entry = this.failed.get(pool);
    if (!entry || entry.epoch !== epoch) {
      entry = { epoch, byShape: new Map() };
      this.failed.set(pool, entry);
    }
    entry.byShape.set(shape, { ok: false, reason: failure.reason, message: failure.message, largestFreeBlock: failure.largestFreeBlock });
  }
}
