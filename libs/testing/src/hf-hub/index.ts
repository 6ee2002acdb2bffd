export { startHubSimulator, parseRange } from './server';
export { sampleHubRepos, SAMPLE_LLAMA_REPO, SAMPLE_LLAMA_GGUF_REPO } from './samples';
export type { HubSimulator, HubSimulatorOptions } from './server';
export type { HubRepoSpec, HubCommitSpec, HubFileSpec, GatedMode } from './repos';
export type { FileContent } from './content';
export type { HubFault, ServedRequest } from './faults';
