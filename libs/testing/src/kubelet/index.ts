export * from './device-plugin-kubelet';
export * from './pod-resources-kubelet';
