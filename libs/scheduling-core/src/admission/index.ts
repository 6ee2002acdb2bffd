export * from './admission-controller';
export * from './decisions';
export { GATES, type GateName, type WorkloadState } from './workload-record';
