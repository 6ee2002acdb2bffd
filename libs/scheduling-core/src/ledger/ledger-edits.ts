/**
 * Edits of one node's ledger. Ledgers are values: every edit returns a new ledger, so a
 * caller can write it with compare-and-set and keep the old one if the write loses.
 */
import type { LedgerEntry, NodeLedger, PodPlacement } from '@gpufleet/contracts';
import type { WorkloadKey } from '../placer';
import { clonePod, comparePods } from './pod-hold';

export function emptyLedger(node: string): NodeLedger {
  return { node, entries: [] };
}

function compareEntries(a: LedgerEntry, b: LedgerEntry): number {
  if (a.workload !== b.workload) return a.workload < b.workload ? -1 : 1;
  if (!a.pod || !b.pod) return a.pod ? 1 : b.pod ? -1 : 0;
  return comparePods(a.pod, b.pod);
}

/** Entries by workload, then pod set, replica and pod: a stable order for diffs and CAS writes. */
export function sortLedgerEntries(entries: readonly LedgerEntry[]): LedgerEntry[] {
  return [...entries].sort(compareEntries);
}

/**
 * The ledger with the workload's pods on this node. Entries the workload already had here are
 * replaced, not added to, so re-applying the same admission (a retried write) is harmless.
 * Pods placed on other nodes are ignored.
 */
export function ledgerWithWorkload(ledger: NodeLedger, workload: WorkloadKey, pods: readonly PodPlacement[]): NodeLedger {
  const kept = ledger.entries.filter((e) => e.workload !== workload);
  for (const pod of pods) if (pod.node === ledger.node) kept.push({ workload, pod: clonePod(pod) });
  return { node: ledger.node, entries: sortLedgerEntries(kept) };
}

/** The ledger without any entry of the workload (it finished, was deleted or preempted). */
export function ledgerWithoutWorkload(ledger: NodeLedger, workload: WorkloadKey): NodeLedger {
  return { node: ledger.node, entries: ledger.entries.filter((e) => e.workload !== workload) };
}

/** Workloads holding something on the node, sorted. */
export function ledgerWorkloads(ledger: NodeLedger): WorkloadKey[] {
  return [...new Set(ledger.entries.map((e) => e.workload))].sort();
}
