export * from './allocations';
export * from './capacity-model';
export {
  CREDITS_PER_ACCELERATOR,
  CREDITS_PER_VCPU,
  MIN_CPU_UNIT_VCPU,
  acceleratorUnitCounts,
  cpuUnitSizes,
  instanceTypeFamily,
  type InstanceTypeUnit,
} from './instance-types';
export { nodeShapeOf, type NodeShape } from './node-capacity';
export {
  dominantProduct,
  poolBaseName,
  poolIdentityHash,
  poolIdentityKey,
  poolIdentityOf,
  PoolNames,
  type DominantProduct,
  type PinnedPoolName,
} from './pools';
