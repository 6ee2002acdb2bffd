import { NodeInventory, NodeLedger, PodPlacement } from '@gpufleet/contracts';
import { KvStore } from '@gpufleet/messaging';
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

  /**
   * Adds the workload's pods; throws LedgerConflictError (after undoing) when a device is taken,
   * RevisionConflictError when the ledger kept changing under every try.
   */
  async add(workload: string, placements: readonly PodPlacement[]): Promise<void> {
    const written: string[] = [];
    try {
      for (const [node, pods] of byNode(placements)) {
        await this.store.modify(node, (current) => {
          this.requireLeading(node);
          const next = ledgerWithWorkload(current?.value ?? emptyLedger(node), workload, pods);
          // The decision was made on this scheduler's mirror; the ledger read just now is the
          // truth. If another writer (a leader that has not noticed it was replaced) took any of
          // these devices meanwhile, refuse rather than hand them out twice.
          const inventory = this.inventoryOf(node);
          const conflicts = inventory ? ledgerConflicts(next, inventory) : [];
          if (conflicts.length > 0) throw new LedgerConflictError(node, conflicts);
          return next;
        });
        written.push(node);
      }
    } catch (err) {
      for (const node of written) await this.removeFrom(node, workload).catch(() => undefined);
      throw err;
    }
  }

  /** Removes the workload from every node it holds; idempotent, retried on conflicts (KvStore.modify). */
  async remove(workload: string, placements: readonly PodPlacement[]): Promise<void> {
    for (const node of byNode(placements).keys()) await this.removeFrom(node, workload);
  }

  /**
   * Replaces the devices of pods already in the node's ledger (`after` of each, matched by
   * workload and pod); throws LedgerConflictError when the result allocates a device twice.
   */
  async correct(node: string, pods: readonly { workload: string; after: PodPlacement }[]): Promise<void> {
    const samePod = (a: PodPlacement, b: PodPlacement): boolean => a.podSet === b.podSet && a.replica === b.replica && a.pod === b.pod;
    await this.store.modify(node, (current) => {
      this.requireLeading(node);
      if (!current) throw new LedgerConflictError(node, ['the node has no ledger to correct']);
      const entries = current.value.entries.map((e) => {
        const fix = e.pod && pods.find((p) => p.workload === e.workload && samePod(p.after, e.pod!));
        return fix ? { workload: e.workload, pod: fix.after } : e;
      });
      const next: NodeLedger = { node, entries };
      const inventory = this.inventoryOf(node);
      const conflicts = inventory ? ledgerConflicts(next, inventory) : [];
      if (conflicts.length > 0) throw new LedgerConflictError(node, conflicts);
      return next;
    });
  }

  async removeFrom(node: string, workload: string): Promise<void> {
    await this.store.modify(node, (current) => {
      this.requireLeading(node);
      if (!current) return undefined;
      const next = ledgerWithoutWorkload(current.value, workload);
      return next.entries.length === current.value.entries.length ? undefined : next;
    });
  }

  private requireLeading(node: string): void {
    if (!this.stillLeading()) throw new LedgerConflictError(node, ['this scheduler is no longer the leader']);
  }
}
