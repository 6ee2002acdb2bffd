/**
 * What one pod of a pod set asks of a node, read once per pod set from its PodResources.
 * One flat shape for every mode keeps the hot path monomorphic.
 */
import type { PodSet } from '@gpufleet/contracts';
import { CORES_PERCENT_PER_ACCELERATOR, SHARED_TOKENS_PER_ACCELERATOR } from '@gpufleet/capacity-core';
import { normalizeMigProfileName } from '@gpufleet/device-inventory';

export type DemandKind = 'host' | 'whole' | 'shared' | 'slice' | 'partition';

export interface PodDemand {
  readonly kind: DemandKind;
  readonly vcpu: number;
  /** Node memory, MiB. */
  readonly memoryMib: number;
  /** Whole accelerators (kind 'whole'). */
  readonly whole: number;
  /** Shared tokens of 10 (kind 'shared'). */
  readonly tokens: number;
  /** Slice memory in MiB, or 0 when given as a percent (kind 'slice'). */
  readonly sliceMemoryMib: number;
  /** Slice memory in percent of the accelerator's, or 0 when given in MiB. */
  readonly sliceMemoryPercent: number;
  readonly sliceCoresPercent: number;
  /** Normalised MIG profile name (kind 'partition'). */
  readonly profile: string;
}

export type DemandOrProblem = { ok: true; demand: PodDemand } | { ok: false; problem: string };

export function podDemandOf(podSet: PodSet): DemandOrProblem {
  const resources = podSet.resources;
  const accelerator = resources?.accelerator;
  const base = {
    vcpu: resources?.vcpu ?? 0,
    memoryMib: resources?.memoryMib ?? 0,
    whole: 0,
    tokens: 0,
    sliceMemoryMib: 0,
    sliceMemoryPercent: 0,
    sliceCoresPercent: 0,
    profile: '',
  };
  const of = (demand: PodDemand): DemandOrProblem => ({ ok: true, demand });
  const problem = (text: string): DemandOrProblem => ({ ok: false, problem: `pod set "${podSet.name}" ${text}` });

  if (accelerator?.whole !== undefined && accelerator.whole > 0) return of({ ...base, kind: 'whole', whole: accelerator.whole });
  if (accelerator?.sharedTokens !== undefined) {
    const tokens = accelerator.sharedTokens;
    if (tokens < 1 || tokens > SHARED_TOKENS_PER_ACCELERATOR) {
      return problem(`asks ${tokens} shared tokens; one accelerator offers 1 to ${SHARED_TOKENS_PER_ACCELERATOR}`);
    }
    return of({ ...base, kind: 'shared', tokens });
  }
  if (accelerator?.slice !== undefined) {
    const { memoryMib, memoryPercent, coresPercent } = accelerator.slice;
    if (coresPercent > CORES_PERCENT_PER_ACCELERATOR) return problem(`asks a slice of ${coresPercent}% compute; at most 100%`);
    if (memoryPercent !== undefined && (memoryPercent < 1 || memoryPercent > 100)) {
      return problem(`asks a slice of ${memoryPercent}% memory; give 1 to 100`);
    }
    const mib = memoryPercent === undefined ? (memoryMib ?? 0) : 0;
    if (mib === 0 && memoryPercent === undefined && coresPercent === 0) return problem('asks an empty slice (no memory, no compute)');
    return of({ ...base, kind: 'slice', sliceMemoryMib: mib, sliceMemoryPercent: memoryPercent ?? 0, sliceCoresPercent: coresPercent });
  }
  if (accelerator?.partitionProfile !== undefined && accelerator.partitionProfile.trim() !== '') {
    return of({ ...base, kind: 'partition', profile: normalizeMigProfileName(accelerator.partitionProfile) });
  }
  return of({ ...base, kind: 'host' });
}

/** Slice memory in MiB on an accelerator of `acceleratorMemoryMib`; percents round up. */
export function sliceMemoryOn(demand: PodDemand, acceleratorMemoryMib: number): number {
  return demand.sliceMemoryPercent > 0 ? Math.ceil((acceleratorMemoryMib * demand.sliceMemoryPercent) / 100) : demand.sliceMemoryMib;
}

/** The accelerator part of a pod in words: "4 whole accelerators", "a 3g.40gb MIG partition". */
export function describeDemand(demand: PodDemand): string {
  switch (demand.kind) {
    case 'whole':
      return demand.whole === 1 ? '1 whole accelerator' : `${demand.whole} whole accelerators`;
    case 'shared':
      return `${demand.tokens} shared token${demand.tokens === 1 ? '' : 's'}`;
    case 'slice': {
      const memory = demand.sliceMemoryPercent > 0 ? `${demand.sliceMemoryPercent}% memory` : `${demand.sliceMemoryMib} MiB`;
      return `a slice of ${memory} and ${demand.sliceCoresPercent}% compute`;
    }
    case 'partition':
      return `a ${demand.profile} MIG partition`;
    case 'host':
      return `${demand.vcpu} vCPU and ${demand.memoryMib} MiB memory`;
  }
}

/** " with 16 vCPU and 65536 MiB memory" when the pod asks for host resources too. */
export function describeHost(demand: PodDemand): string {
  if (demand.kind === 'host' || (demand.vcpu === 0 && demand.memoryMib === 0)) return '';
  return ` with ${demand.vcpu} vCPU and ${demand.memoryMib} MiB memory`;
}
