export { startHubSimulator, parseRange } from './server';
export type { HubSimulator, HubSimulatorOptions } from './server';
export type { HubRepoSpec, HubCommitSpec, HubFileSpec, GatedMode } from './repos';
export type { FileContent } from './content';
export type { HubFault, ServedRequest } from './faults';
