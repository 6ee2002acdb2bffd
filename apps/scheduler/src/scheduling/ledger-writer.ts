import { NodeLedger, PodPlacement } from '@gpufleet/contracts';
import { KvStore, RevisionConflictError } from '@gpufleet/messaging';
import { emptyLedger, ledgerWithWorkload, ledgerWithoutWorkload } from '@gpufleet/scheduling-core';

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
  constructor(private readonly store: KvStore<NodeLedger>) {}

  /** Adds the workload's pods; throws RevisionConflictError (after undoing) on a conflict. */
  async add(workload: string, placements: readonly PodPlacement[]): Promise<void> {
    const written: string[] = [];
    try {
      for (const [node, pods] of byNode(placements)) {
        const current = await this.store.get(node);
        const next = ledgerWithWorkload(current?.value ?? emptyLedger(node), workload, pods);
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
