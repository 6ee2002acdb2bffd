// The pure process model (ProcessSpec, devicesEnv, ProcessStatus, ProcessRuntimeError) lives in
// the domain lib @gpufleet/process-spec; re-exported so the apps keep one entry point.
export * from '@gpufleet/process-spec';
export * from './clock';
export * from './health-probe';
export * from './log-file';
export * from './proc';
export * from './process-host';
export * from './supervised-process';
export * from './state-file';
export * from './adoption';
export * from './process-table';
export * from './sshd-instance';
export * from './sandbox';
export * from './cgroup';
