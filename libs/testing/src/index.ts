export { freePort, isPortOpen, waitFor, requireBinary } from '@gpufleet/process-kit';
export * from './servers';
