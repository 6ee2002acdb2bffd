import { AcceleratorVendor, type Accelerator, type NodeInventory } from '@gpufleet/contracts';
import { toLabelValue } from './label-value';

/** The parts of an inventory labels are computed from (labels themselves are not an input). */
export type LabelSource = Pick<
  NodeInventory,
  'accelerators' | 'nics' | 'cpu' | 'os' | 'kernel' | 'topology' | 'driverVersion' | 'runtimeVersion'
>;

export type NodeLabels = Record<string, string>;

/** Keys follow NVIDIA GPU Feature Discovery, the AMD node labeller, Ascend's device plugin and NFD. */
export const LABEL = {
  nvidiaPresent: 'nvidia.com/gpu.present',
  nvidiaProduct: 'nvidia.com/gpu.product',
  nvidiaMemory: 'nvidia.com/gpu.memory',
  nvidiaCount: 'nvidia.com/gpu.count',
  nvidiaFamily: 'nvidia.com/gpu.family',
  nvidiaComputeMajor: 'nvidia.com/gpu.compute.major',
  nvidiaComputeMinor: 'nvidia.com/gpu.compute.minor',
  cudaDriverMajor: 'nvidia.com/cuda.driver.major',
  cudaDriverMinor: 'nvidia.com/cuda.driver.minor',
  cudaDriverRev: 'nvidia.com/cuda.driver.rev',
  cudaRuntimeMajor: 'nvidia.com/cuda.runtime.major',
  cudaRuntimeMinor: 'nvidia.com/cuda.runtime.minor',
  migCapable: 'nvidia.com/mig.capable',
  migStrategy: 'nvidia.com/mig.strategy',
  amdPresent: 'amd.com/gpu.present',
  amdProduct: 'amd.com/gpu.product-name',
  amdFamily: 'amd.com/gpu.family',
  amdVram: 'amd.com/gpu.vram',
  amdCount: 'amd.com/gpu.count',
  amdDriverVersion: 'amd.com/gpu.driver-version',
  npuPresent: 'huawei.com/npu.present',
  npuProduct: 'huawei.com/npu.product',
  npuMemory: 'huawei.com/npu.memory',
  npuCount: 'huawei.com/npu.count',
  npuFamily: 'huawei.com/npu.family',
  npuDriverVersion: 'huawei.com/npu.driver-version',
  npuChipName: 'node.kubernetes.io/npu.chip.name',
  rdmaCapable: 'feature.node.kubernetes.io/rdma.capable',
  rdmaAvailable: 'feature.node.kubernetes.io/rdma.available',
  rdmaLinkLayer: 'gpufleet.io/rdma.link-layer',
  zone: 'gpufleet.io/zone',
  rack: 'gpufleet.io/rack',
  nvlinkDomain: 'gpufleet.io/nvlink-domain',
  arch: 'kubernetes.io/arch',
  os: 'kubernetes.io/os',
  osReleaseId: 'feature.node.kubernetes.io/system-os_release.ID',
  osReleaseVersionId: 'feature.node.kubernetes.io/system-os_release.VERSION_ID',
  kernelFull: 'feature.node.kubernetes.io/kernel-version.full',
  kernelMajor: 'feature.node.kubernetes.io/kernel-version.major',
  kernelMinor: 'feature.node.kubernetes.io/kernel-version.minor',
  kernelRevision: 'feature.node.kubernetes.io/kernel-version.revision',
} as const;

/** Kubernetes (Go) architecture names for the machine names the inventory carries. */
const KUBERNETES_ARCH: Record<string, string> = {
  x86_64: 'amd64',
  aarch64: 'arm64',
  ppc64le: 'ppc64le',
  s390x: 's390x',
  riscv64: 'riscv64',
};

function setIf(labels: NodeLabels, key: string, value: string | number | undefined): void {
  if (value === undefined) return;
  const text = toLabelValue(String(value));
  if (text !== '') labels[key] = text;
}

/** "550.54.15" → ["550", "54", "15"]; kept as strings because GFD keeps leading zeros ("03"). */
function versionParts(version: string | undefined): string[] {
  return version ? version.trim().split(/[.-]/).filter((p) => /^\d+$/.test(p)) : [];
}

function ofVendor(accelerators: Accelerator[], vendor: AcceleratorVendor): Accelerator[] {
  return accelerators.filter((a) => a.vendor === vendor).sort((a, b) => a.index - b.index);
}

/**
 * GFD's MIG "mixed" strategy: one label set per partition type, named mig-<profile>;
 * a "+me" (media extensions) suffix is not valid in a key and becomes ".me".
 */
function migLabels(labels: NodeLabels, gpus: Accelerator[]): void {
  const byProfile = new Map<string, { count: number; memoryMib?: number }>();
  for (const gpu of gpus) {
    if (!gpu.migEnabled) continue;
    for (const mig of gpu.migDevices) {
      const entry = byProfile.get(mig.profile) ?? { count: 0, memoryMib: mig.memoryMib };
      entry.count += 1;
      byProfile.set(mig.profile, entry);
    }
  }
  if (!gpus.some((g) => g.migEnabled)) return;
  labels[LABEL.migStrategy] = 'mixed';
  for (const [profile, { count, memoryMib }] of byProfile) {
    const type = `mig-${profile.replace(/\+/g, '.')}`;
    labels[`nvidia.com/${type}.count`] = String(count);
    setIf(labels, `nvidia.com/${type}.memory`, memoryMib);
    const slices = /^(\d+)g\./.exec(profile)?.[1];
    if (slices) {
      labels[`nvidia.com/${type}.slices.gi`] = slices;
      labels[`nvidia.com/${type}.slices.ci`] = slices;
    }
  }
}

function nvidiaLabels(labels: NodeLabels, source: LabelSource, gpus: Accelerator[], soleVendor: boolean): void {
  // GFD describes the node by its first GPU; nodes mixing GPU models are rare and unsupported by it too.
  const first = gpus[0];
  labels[LABEL.nvidiaPresent] = 'true';
  labels[LABEL.nvidiaCount] = String(gpus.length);
  setIf(labels, LABEL.nvidiaProduct, first.product);
  setIf(labels, LABEL.nvidiaMemory, first.memoryMib);
  setIf(labels, LABEL.nvidiaFamily, first.family);
  const [major, minor] = (first.computeCapability ?? '').split('.');
  if (/^\d+$/.test(major ?? '')) labels[LABEL.nvidiaComputeMajor] = major;
  if (/^\d+$/.test(minor ?? '')) labels[LABEL.nvidiaComputeMinor] = minor;
  if (soleVendor) {
    const [dMajor, dMinor, dRev] = versionParts(source.driverVersion);
    setIf(labels, LABEL.cudaDriverMajor, dMajor);
    setIf(labels, LABEL.cudaDriverMinor, dMinor);
    setIf(labels, LABEL.cudaDriverRev, dRev);
    const [rMajor, rMinor] = versionParts(source.runtimeVersion);
    setIf(labels, LABEL.cudaRuntimeMajor, rMajor);
    setIf(labels, LABEL.cudaRuntimeMinor, rMinor);
  }
  labels[LABEL.migCapable] = String(gpus.some((g) => g.migCapable));
  migLabels(labels, gpus);
}

function amdLabels(labels: NodeLabels, source: LabelSource, gpus: Accelerator[], soleVendor: boolean): void {
  const first = gpus[0];
  labels[LABEL.amdPresent] = 'true';
  labels[LABEL.amdCount] = String(gpus.length);
  // The AMD labeller joins words with "_": "AMD_Instinct_MI300X_OAM".
  const product = toLabelValue(first.product, '_');
  if (product) labels[LABEL.amdProduct] = product;
  setIf(labels, LABEL.amdFamily, first.family);
  // The AMD labeller writes VRAM in whole GiB with a "G" suffix, e.g. "192G".
  if (first.memoryMib !== undefined) labels[LABEL.amdVram] = `${Math.round(first.memoryMib / 1024)}G`;
  if (soleVendor) setIf(labels, LABEL.amdDriverVersion, source.driverVersion);
}

function ascendLabels(labels: NodeLabels, source: LabelSource, npus: Accelerator[], soleVendor: boolean): void {
  const first = npus[0];
  labels[LABEL.npuPresent] = 'true';
  labels[LABEL.npuCount] = String(npus.length);
  setIf(labels, LABEL.npuProduct, first.product);
  setIf(labels, LABEL.npuMemory, first.memoryMib);
  setIf(labels, LABEL.npuFamily, first.family);
  // Ascend's device plugin labels the chip without the brand, e.g. "910B3".
  setIf(labels, LABEL.npuChipName, first.product.replace(/^Ascend\s*/i, ''));
  if (soleVendor) setIf(labels, LABEL.npuDriverVersion, source.driverVersion);
}

function rdmaLabels(labels: NodeLabels, source: LabelSource): void {
  if (source.nics.length === 0) return;
  labels[LABEL.rdmaCapable] = 'true';
  const active = source.nics.filter((n) => n.state === 'ACTIVE');
  // NFD's rdma.available means "usable now"; here that is at least one ACTIVE port.
  if (active.length === 0) return;
  labels[LABEL.rdmaAvailable] = 'true';
  const layers = new Set(active.map((n) => n.linkLayer));
  if (layers.size === 1) setIf(labels, LABEL.rdmaLinkLayer, [...layers][0]);
}

function systemLabels(labels: NodeLabels, source: LabelSource): void {
  const architecture = source.cpu?.architecture;
  if (architecture) setIf(labels, LABEL.arch, KUBERNETES_ARCH[architecture] ?? architecture);
  const [kind, release] = source.os.split('/', 2);
  setIf(labels, LABEL.os, kind || undefined);
  // "ubuntu-22.04" → ID ubuntu, VERSION_ID 22.04 (IDs may contain "-", versions start with a digit).
  const match = release ? /^(.*?)(?:-(\d[^-]*))?$/.exec(release) : null;
  if (match) {
    setIf(labels, LABEL.osReleaseId, match[1] || undefined);
    setIf(labels, LABEL.osReleaseVersionId, match[2]);
  }
  if (source.kernel) {
    setIf(labels, LABEL.kernelFull, source.kernel);
    const [major, minor, revision] = versionParts(source.kernel.split('-')[0]);
    setIf(labels, LABEL.kernelMajor, major);
    setIf(labels, LABEL.kernelMinor, minor);
    setIf(labels, LABEL.kernelRevision, revision);
  }
}

function topologyLabels(labels: NodeLabels, source: LabelSource): void {
  setIf(labels, LABEL.zone, source.topology?.zone);
  setIf(labels, LABEL.rack, source.topology?.rack);
  setIf(labels, LABEL.nvlinkDomain, source.topology?.nvlinkDomain);
}

/** NFD-style labels describing the node's accelerators, RDMA, topology and system. */
export function computeNodeLabels(source: LabelSource): NodeLabels {
  const labels: NodeLabels = {};
  const nvidia = ofVendor(source.accelerators, AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA);
  const amd = ofVendor(source.accelerators, AcceleratorVendor.ACCELERATOR_VENDOR_AMD);
  const ascend = ofVendor(source.accelerators, AcceleratorVendor.ACCELERATOR_VENDOR_ASCEND);
  // The inventory carries one driver/runtime version; it can only be attributed when one vendor is present.
  const soleVendor = [nvidia, amd, ascend].filter((g) => g.length > 0).length === 1;
  if (nvidia.length > 0) nvidiaLabels(labels, source, nvidia, soleVendor);
  if (amd.length > 0) amdLabels(labels, source, amd, soleVendor);
  if (ascend.length > 0) ascendLabels(labels, source, ascend, soleVendor);
  rdmaLabels(labels, source);
  topologyLabels(labels, source);
  systemLabels(labels, source);
  return labels;
}
