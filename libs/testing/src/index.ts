export * from '@gpufleet/process-kit';
export * from './node-inventory';
export * from './servers';
export * from './certificates';
export * from './hostile-engine';
export * from './grpc';
export * from './kubelet';
export * from './kube-apiserver';
