export { ACCELERATOR_CATALOG, lookupAccelerator, type CatalogAccelerator } from './catalog';
export { FleetFileError, type FleetIssue } from './field-reader';
export { loadFleetFile, parseFleet } from './fleet-file';
export type {
  Fleet,
  FleetAccelerators,
  FleetNics,
  FleetNode,
  Interconnect,
  MigPartition,
  RdmaLinkLayer,
} from './fleet-types';
export { migGeometryFor, placeMigPartitions, type MigGeometry, type MigProfile, type MigRequest } from './mig-profiles';
export { expandNamePattern } from './node-names';
export {
  deterministicUuid,
  findFleetNode,
  numaCpuList,
  simulatedHostInfo,
  simulatedInventory,
  type SimulatedNodeInventory,
} from './simulated-inventory';
export { SimulatedProvider } from './simulated-provider';
