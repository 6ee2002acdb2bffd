/**
 * What one ledger entry holds on its node, read from its PodPlacement. A placement carries
 * one allocation mode; the fields that say which are checked in a fixed order so every reader
 * (ledger views, conflict checks, the placement engine) classifies an entry the same way.
 */
import type { PodPlacement } from '@gpufleet/contracts';
import { normalizeMigProfileName } from '@gpufleet/device-inventory';

export type PodHold =
  | { readonly kind: 'whole'; readonly acceleratorIds: readonly string[] }
  | { readonly kind: 'shared'; readonly acceleratorId: string; /** of 10 */ readonly tokens: number }
  | {
      readonly kind: 'slice';
      readonly acceleratorId: string;
      /** MiB */
      readonly memoryMib: number;
      /** percent of the accelerator's compute */
      readonly coresPercent: number;
    }
  | { readonly kind: 'partition'; readonly acceleratorId: string; readonly profile: string; readonly start: number }
  /** CPU and memory only. */
  | { readonly kind: 'host' };

const HOST_ONLY: PodHold = Object.freeze({ kind: 'host' });

export function podHoldOf(pod: PodPlacement): PodHold {
  if (pod.partition) {
    return {
      kind: 'partition',
      acceleratorId: pod.partition.acceleratorId,
      profile: normalizeMigProfileName(pod.partition.profile),
      start: pod.partition.start,
    };
  }
  const first = pod.acceleratorIds[0];
  if (first === undefined) return HOST_ONLY;
  if (pod.sharedTokens > 0) return { kind: 'shared', acceleratorId: first, tokens: pod.sharedTokens };
  if (pod.sliceMemoryMib > 0 || pod.sliceCoresPercent > 0) {
    return { kind: 'slice', acceleratorId: first, memoryMib: pod.sliceMemoryMib, coresPercent: pod.sliceCoresPercent };
  }
  return { kind: 'whole', acceleratorIds: pod.acceleratorIds };
}

/** "ns/train pod worker/0/1": names one pod in messages. */
export function podLabel(workload: string, pod: PodPlacement): string {
  return `${workload} pod ${pod.podSet}/${pod.replica}/${pod.pod}`;
}

/** Orders pods by pod set, replica, pod: the order ledgers and outcomes list them in. */
export function comparePods(a: PodPlacement, b: PodPlacement): number {
  if (a.podSet !== b.podSet) return a.podSet < b.podSet ? -1 : 1;
  return a.replica - b.replica || a.pod - b.pod;
}

/** A deep copy, so a caller mutating what it passed in cannot change a ledger. */
export function clonePod(pod: PodPlacement): PodPlacement {
  return { ...pod, acceleratorIds: [...pod.acceleratorIds], partition: pod.partition && { ...pod.partition } };
}
