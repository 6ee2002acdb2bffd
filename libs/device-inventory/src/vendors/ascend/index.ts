export {
  AscendProvider,
  ascendAcceleratorId,
  ascendProductName,
  ascendSocVersion,
  type AscendProviderOptions,
} from './ascend-provider';
export { parseNpuSmiInfo, type AscendChipRecord, type NpuSmiInfo } from './npu-smi-info';
