export { NvidiaProvider, type NvidiaProviderOptions } from './nvidia-provider';
export {
  NVIDIA_QUERY_GPU_FIELDS,
  parseNvidiaQueryGpu,
  type NvidiaGpuRecord,
  type NvidiaQueryGpuField,
} from './query-gpu';
export { parseNvidiaGpuList, type NvidiaListedGpu } from './gpu-list';
export {
  nvidiaAcceleratorId,
  parseNvidiaTopology,
  type NvidiaGpuPlacement,
  type NvidiaTopology,
} from './topology-matrix';
export { NVIDIA_VERSION_QUERY, parseNvidiaDriverVersions, type NvidiaDriverVersions } from './driver-versions';
export { resolveNvidiaArchitecture } from './architecture';
