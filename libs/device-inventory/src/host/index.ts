export { machineArchitecture } from './architecture';
export { describeArmCore } from './arm-cpu';
export { parseCpuinfo, type CpuinfoFacts } from './cpuinfo';
export {
  localStorageGib,
  readCpu,
  readHostInfo,
  readMemory,
  type HostInfo,
  type HostInfoSource,
  type HostReadOptions,
} from './host-info';
export { HostProvider } from './host-provider';
export { parseMeminfo } from './meminfo';
export { osIdentity, parseOsReleaseFields } from './os-release';
export { parseNumaNode, parsePortRate, parsePortState, readRdmaNics } from './rdma';
export { RdmaProvider } from './rdma-provider';
