export { ledgerAllocations } from './ledger-allocations';
export { ledgerConflicts } from './ledger-conflicts';
export { emptyLedger, ledgerWithWorkload, ledgerWithoutWorkload, ledgerWorkloads, sortLedgerEntries } from './ledger-edits';
export { clonePod, comparePods, podHoldOf, podLabel, type PodHold } from './pod-hold';
