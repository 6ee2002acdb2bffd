export { KubeletSimulator, startKubeletSimulator } from './kubelet-simulator';
export type { KubeletSimNode, KubeletSimulatorOptions } from './kubelet-simulator';
