export * from './admission-controller';
export * from './decisions';
export { GATES, emptyStatus, type GateName, type WorkloadState } from './workload-record';
