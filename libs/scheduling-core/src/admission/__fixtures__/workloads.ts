// Builders for admission specs: pools, queues and workloads with the defaults a scenario ignores.
import {
  ClusterQueue,
  PodSet,
  PreemptionPolicy,
  QueueingStrategy,
  WorkloadSpec,
} from '@gpufleet/contracts';
import { migGeometryForProduct } from '@gpufleet/device-inventory';
import { definePoolShape, PoolShape } from '../../validation/pool-shape';

export const H100 = 'NVIDIA H100 80GB HBM3';
export const ACCEL = 1_600_000;

export function h100Pool(name = 'h100', nodes = 4, options: { migAccelerators?: number; accelerators?: number } = {}): PoolShape {
  return definePoolShape({
    name,
    acceleratorProduct: H100,
    acceleratorMemoryMib: 81_559,
    migGeometry: migGeometryForProduct(H100, 81_559),
    nodeShapes: [{ accelerators: options.accelerators ?? 8, migAccelerators: options.migAccelerators ?? 0, vcpu: 224, memoryMib: 2_000_000, nodes }],
  });
}

export function cpuPool(name = 'cpu', nodes = 2): PoolShape {
  return definePoolShape({ name, nodeShapes: [{ accelerators: 0, migAccelerators: 0, vcpu: 64, memoryMib: 256_000, nodes }] });
}

export function clusterQueue(name: string, overrides: Partial<ClusterQueue> = {}): ClusterQueue {
  return {
    name,
    pool: 'h100',
    cohort: '',
    queueingStrategy: QueueingStrategy.QUEUEING_STRATEGY_BEST_EFFORT_FIFO,
    nominalQuota: 8 * ACCEL,
    fairSharingWeight: 1,
    withinClusterQueue: PreemptionPolicy.PREEMPTION_POLICY_NEVER,
    reclaimWithinCohort: PreemptionPolicy.PREEMPTION_POLICY_NEVER,
    packing: '',
    usage: undefined,
    ...overrides,
  };
}

export interface WholeOptions {
  namespace?: string;
  localQueue?: string;
  priority?: number;
  /** Accelerators per pod. */
  whole?: number;
  count?: number;
  size?: number;
  requiredLevel?: string;
}

export function podSet(name: string, whole: number, count = 1, size = 1, requiredLevel = ''): PodSet {
  return {
    name,
    count,
    size,
    resources: { accelerator: { whole }, vcpu: 8, memoryMib: 65_536 },
    topology: requiredLevel === '' ? undefined : { requiredLevel, preferredLevel: '' },
  };
}

export function wholeWorkload(name: string, options: WholeOptions = {}): WorkloadSpec {
  return {
    name,
    namespace: options.namespace ?? 'team-a',
    localQueue: options.localQueue ?? 'main',
    priority: options.priority ?? 0,
    podSets: [podSet('main', options.whole ?? 1, options.count ?? 1, options.size ?? 1, options.requiredLevel ?? '')],
    labels: {},
    template: undefined,
    pool: '',
  };
}
