import { AcceleratorRequest, PodResources } from '@gpufleet/contracts';
import { checkRange } from './flags';

/**
 * Defaults for pods asked for by accelerator count, from what the example workloads use
 * (`serve-llama`: 1 accelerator, 8 vCPU, 64 GiB; `notebook-mig`: one partition, 4 vCPU, 32 GiB).
 */
export const VCPU_PER_ACCELERATOR = 8;
export const MEMORY_MIB_PER_ACCELERATOR = 64 * 1024; // MiB
export const FRACTIONAL_VCPU = 4;
export const FRACTIONAL_MEMORY_MIB = 32 * 1024; // MiB

/** What one pod gets, as flags: an InstanceType, or an allocation mode with CPU and memory. */
export interface PodShapeFlags {
  instanceType?: string;
  /** Whole accelerators per pod; 0 asks for a CPU-only pod. */
  accelerators?: number;
  migProfile?: string;
  /** MiB of one accelerator's memory. */
  sliceMemory?: number;
  sliceMemoryPercent?: number;
  sliceCores?: number;
  sharedTokens?: number;
  vcpu?: number;
  /** MiB */
  memory?: number;
}

export interface PodShape {
  /** Empty when `resources` is set. */
  instanceType: string;
  resources: PodResources | undefined;
}

/**
 * One allocation mode per pod: --instance-type, --accelerators, --mig-profile, a slice
 * (--slice-memory or --slice-memory-percent, with --slice-cores) or --shared-tokens. Without any,
 * one whole accelerator. --vcpu and --memory override the defaults of the mode.
 */
export function podShapeFromFlags(f: PodShapeFlags): PodShape {
  const chosen = [
    f.instanceType !== undefined && '--instance-type',
    f.accelerators !== undefined && '--accelerators',
    f.migProfile !== undefined && '--mig-profile',
    (f.sliceMemory !== undefined || f.sliceMemoryPercent !== undefined || f.sliceCores !== undefined) && 'a slice (--slice-*)',
    f.sharedTokens !== undefined && '--shared-tokens',
  ].filter((x): x is string => Boolean(x));
  if (chosen.length > 1) throw new Error(`${chosen.join(' and ')} each choose what a pod gets; pass only one of them`);

  if (f.instanceType !== undefined) {
    if (f.instanceType === '') throw new Error('--instance-type: expected an InstanceType name (list them with `gpufleet get instancetypes`)');
    const extra = [f.vcpu !== undefined && '--vcpu', f.memory !== undefined && '--memory'].filter(Boolean);
    if (extra.length) throw new Error(`--instance-type fixes the pod's CPU and memory; drop ${extra.join(' and ')} (or use --accelerators instead)`);
    return { instanceType: f.instanceType, resources: undefined };
  }

  let accelerator: AcceleratorRequest | undefined;
  let vcpu = FRACTIONAL_VCPU;
  let memoryMib = FRACTIONAL_MEMORY_MIB;
  if (f.migProfile !== undefined) {
    if (f.migProfile.trim() === '') throw new Error('--mig-profile: expected a MIG profile such as 1g.10gb or 3g.40gb');
    accelerator = { partitionProfile: f.migProfile.trim() };
  } else if (f.sharedTokens !== undefined) {
    accelerator = { sharedTokens: checkRange(f.sharedTokens, 1, 10, '--shared-tokens', '10 tokens are one accelerator') };
  } else if (f.sliceMemory !== undefined || f.sliceMemoryPercent !== undefined || f.sliceCores !== undefined) {
    if (f.sliceMemory !== undefined && f.sliceMemoryPercent !== undefined) throw new Error('--slice-memory and --slice-memory-percent both size the slice; pass one');
    if (f.sliceMemory === undefined && f.sliceMemoryPercent === undefined) throw new Error('--slice-cores needs --slice-memory MIB or --slice-memory-percent P');
    if (f.sliceCores === undefined) throw new Error(`${f.sliceMemory !== undefined ? '--slice-memory' : '--slice-memory-percent'} needs --slice-cores P (percent of the accelerator's compute)`);
    checkRange(f.sliceCores, 1, 100, '--slice-cores', 'percent');
    accelerator = {
      slice: f.sliceMemory !== undefined
        ? { memoryMib: checkRange(f.sliceMemory, 1, Number.MAX_SAFE_INTEGER, '--slice-memory', 'MiB'), coresPercent: f.sliceCores }
        : { memoryPercent: checkRange(f.sliceMemoryPercent ?? 0, 1, 100, '--slice-memory-percent', 'percent'), coresPercent: f.sliceCores },
    };
  } else {
    const n = f.accelerators ?? 1;
    accelerator = n > 0 ? { whole: n } : undefined;
    vcpu = VCPU_PER_ACCELERATOR * Math.max(1, n);
    memoryMib = MEMORY_MIB_PER_ACCELERATOR * Math.max(1, n);
  }
  if (f.vcpu !== undefined) vcpu = checkRange(f.vcpu, 1, Number.MAX_SAFE_INTEGER, '--vcpu');
  if (f.memory !== undefined) memoryMib = checkRange(f.memory, 1, Number.MAX_SAFE_INTEGER, '--memory', 'MiB');
  return { instanceType: '', resources: { accelerator, vcpu, memoryMib } };
}
