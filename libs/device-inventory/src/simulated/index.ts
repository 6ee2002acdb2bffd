export { FleetFileError, type FleetIssue } from './field-reader';
export { loadFleetFile, parseFleet } from './fleet-file';
export type {
  Fleet,
  FleetAccelerators,
  FleetNics,
  FleetNode,
  MigPartition,
  RdmaLinkLayer,
} from './fleet-types';
export { placeMigPartitions, type MigRequest } from './mig-placement';
export { expandNamePattern } from './node-names';
export {
  deterministicUuid,
  findFleetNode,
  fleetNodeList,
  listNames,
  numaCpuList,
  simulatedHostInfo,
  simulatedDetection,
  simulatedInventory,
  type SimulatedNodeInventory,
} from './simulated-inventory';
export { SimulatedProvider } from './simulated-provider';
