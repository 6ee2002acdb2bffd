export { defaultPoolOf, PlacementEngine } from './placement-engine';
export { TOPOLOGY_LEVELS, topologyLevelIndex, type TopologyLevel } from './topology-levels';
export type { NodeTenancy } from './tenancy';
