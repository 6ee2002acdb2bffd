import { NodeInventory, NodeLedger, PodPlacement } from '@gpufleet/contracts';
import { KvStore, RevisionConflictError } from '@gpufleet/messaging';
import { emptyLedger, ledgerConflicts, ledgerWithWorkload, ledgerWithoutWorkload } from '@gpufleet/scheduling-core';

/** The devices a decision chose are no longer free in the stored ledger. */
export class LedgerConflictError extends Error {
  constructor(node: string, conflicts: string[]) {
    super(`LEDGER_CONFLICT: ${node}: ${conflicts.slice(0, 3).join('; ')}`);
  }
}

function byNode(placements: readonly PodPlacement[]): Map<string, PodPlacement[]> {
  const out = new Map<string, PodPlacement[]>();
  for (const p of placements) out.set(p.node, [...(out.get(p.node) ?? []), p]);
  return out;
}

/**
 * Writes workloads into and out of the per-node devices ledger with compare-and-set. A
 * multi-node admission writes node by node and undoes the nodes already written when a later
 * one conflicts, so no node keeps half of a gang.
 */
export class LedgerWriter {
  constructor(
    private readonly store: KvStore<NodeLedger>,
    /** The node's inventory, to check a new ledger against. */
    private readonly inventoryOf: (node: string) => NodeInventory | undefined,
    /** Writes stop the moment this turns false (the lease was lost). */
    private readonly stillLeading: () => boolean,
  ) {}

  /** Adds the workload's pods; throws RevisionConflictError or LedgerConflictError (after undoing) on a conflict. */
  async add(workload: string, placements: readonly PodPlacement[]): Promise<void> {
    const written: string[] = [];
    try {
      for (const [node, pods] of byNode(placements)) {
        if (!this.stillLeading()) throw new LedgerConflictError(node, ['this scheduler is no longer the leader']);
        const current = await this.store.get(node);
        const next = ledgerWithWorkload(current?.value ?? emptyLedger(node), workload, pods);
        // The decision was made on this scheduler's mirror; the ledger read just now is the
        // truth. If another writer (a leader that has not noticed it was replaced) took any of
        // these devices meanwhile, refuse rather than hand them out twice.
        const inventory = this.inventoryOf(node);
        const conflicts = inventory ? ledgerConflicts(next, inventory) : [];
        if (conflicts.length > 0) throw new LedgerConflictError(node, conflicts);
        if (current) await this.store.update(node, next, current.revision);
        else await this.store.create(node, next);
        written.push(node);
      }
    } catch (err) {
      for (const node of written) await this.removeFrom(node, workload).catch(() => undefined);
      throw err;
    }
  }

  /** Removes the workload from every node it holds; idempotent, retries on conflicts. */
  async remove(workload: string, placements: readonly PodPlacement[]): Promise<void> {
    for (const node of byNode(placements).keys()) await this.removeFrom(node, workload);
  }

  async removeFrom(node: string, workload: string): Promise<void> {
    for (let attempt = 0; attempt < 10; attempt++) {
      if (!this.stillLeading()) throw new LedgerConflictError(node, ['this scheduler is no longer the leader']);
      const current = await this.store.get(node);
      if (!current) return;
      const next = ledgerWithoutWorkload(current.value, workload);
      if (next.entries.length === current.value.entries.length) return;
      try {
        await this.store.update(node, next, current.revision);
        return;
      } catch (err) {
        if (!(err instanceof RevisionConflictError)) throw err;
      }
    }
    throw new Error(`could not remove ${workload} from the ledger of ${node} after 10 conflicting attempts`);
  }
}
