export { keyOfSpec, keyOfStoreKey, storeKey, workloadKey } from '@gpufleet/contracts';
