export * from '@gpufleet/process-kit';
export * from './servers';
