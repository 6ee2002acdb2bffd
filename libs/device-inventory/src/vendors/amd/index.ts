export { AmdProvider, amdAcceleratorId, type AmdProviderOptions } from './amd-provider';
export { parseAmdSmiList, parseAmdSmiStatic, type AmdListedGpu } from './amd-smi';
export {
  ROCM_SMI_INVENTORY_ARGS,
  ROCM_SMI_TOPOLOGY_ARGS,
  parseRocmSmiCards,
  parseRocmSmiLinkTypes,
} from './rocm-smi';
export type { AmdGpuRecord } from './amd-gpu-record';
export { normalizeGfxTarget } from './architecture';
