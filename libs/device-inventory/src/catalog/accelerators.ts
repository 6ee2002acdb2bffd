import { AcceleratorVendor } from '@gpufleet/contracts';
import { amdFamilyOf, ascendFamilyOf, nvidiaArchitectureOf } from './architectures';
import { migGeometryForProduct, type MigGeometry } from './mig-profiles';

/** How a node's accelerators reach each other. */
export type Interconnect = 'nvlink' | 'pcie' | 'xgmi' | 'hccs';

/** What gpufleet knows about a well-known accelerator, e.g. for a fleet file to leave out. */
export interface CatalogAccelerator {
  vendor: AcceleratorVendor;
  family: string;
  /** MiB, as the vendor tool reports the total. */
  memoryMib: number;
  computeCapability?: string;
  interconnect: Interconnect;
  /** Bonded NVLinks between each pair on the baseboard (NV18 on HGX H100). */
  nvlinks?: number;
  powerLimitWatts: number;
  migCapable: boolean;
}

const AMD = AcceleratorVendor.ACCELERATOR_VENDOR_AMD;
const ASCEND = AcceleratorVendor.ACCELERATOR_VENDOR_ASCEND;

/** Family and compute capability come from the architecture table, MIG from the MIG catalogue. */
function nv(
  product: string,
  memoryMib: number,
  interconnect: Interconnect,
  powerLimitWatts: number,
  nvlinks?: number,
): [string, CatalogAccelerator] {
  const architecture = nvidiaArchitectureOf(product);
  return [
    product,
    {
      vendor: AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA,
      family: architecture?.family ?? '',
      memoryMib,
      computeCapability: architecture?.computeCapability,
      interconnect,
      powerLimitWatts,
      migCapable: migGeometryForProduct(product, memoryMib) !== undefined,
      nvlinks,
    },
  ];
}

/** `gfxTarget` is the compute capability amd-smi reports. */
function amd(product: string, memoryMib: number, gfxTarget: string, interconnect: Interconnect, powerLimitWatts: number): [string, CatalogAccelerator] {
  const family = amdFamilyOf(product, gfxTarget);
  return [product, { vendor: AMD, family, memoryMib, computeCapability: gfxTarget, interconnect, powerLimitWatts, migCapable: false }];
}

function ascend(product: string, memoryMib: number, interconnect: Interconnect, powerLimitWatts: number): [string, CatalogAccelerator] {
  return [product, { vendor: ASCEND, family: ascendFamilyOf(product), memoryMib, interconnect, powerLimitWatts, migCapable: false }];
}

/** Keyed by the product name the vendor tool prints (nvidia-smi, amd-smi, npu-smi). */
export const ACCELERATOR_CATALOG: Readonly<Record<string, CatalogAccelerator>> = Object.fromEntries([
  nv('NVIDIA B200', 183359, 'nvlink', 1000, 18),
  nv('NVIDIA H200', 143771, 'nvlink', 700, 18),
  nv('NVIDIA H100 80GB HBM3', 81559, 'nvlink', 700, 18),
  nv('NVIDIA H100 NVL', 95830, 'pcie', 400),
  nv('NVIDIA H100 PCIe', 81559, 'pcie', 350),
  nv('NVIDIA H20', 97871, 'nvlink', 400, 18),
  nv('NVIDIA A100-SXM4-80GB', 81920, 'nvlink', 400, 12),
  nv('NVIDIA A100-SXM4-40GB', 40960, 'nvlink', 400, 12),
  nv('NVIDIA A100 80GB PCIe', 81920, 'pcie', 300),
  nv('NVIDIA A100-PCIE-40GB', 40960, 'pcie', 250),
  nv('NVIDIA A30', 24576, 'pcie', 165),
  nv('NVIDIA A10', 23028, 'pcie', 150),
  nv('NVIDIA L40S', 46068, 'pcie', 350),
  nv('NVIDIA L40', 46068, 'pcie', 300),
  nv('NVIDIA L4', 23034, 'pcie', 72),
  nv('NVIDIA RTX 6000 Ada Generation', 49140, 'pcie', 300),
  nv('Tesla T4', 15360, 'pcie', 70),
  amd('AMD Instinct MI325X', 262144, 'gfx942', 'xgmi', 1000),
  amd('AMD Instinct MI300X', 196608, 'gfx942', 'xgmi', 750),
  // amd-smi lists each MI250X GCD as its own GPU with half the package's 128 GB.
  amd('AMD Instinct MI250X', 65536, 'gfx90a', 'xgmi', 500),
  amd('AMD Instinct MI210', 65536, 'gfx90a', 'pcie', 300),
  ascend('910B2', 65536, 'hccs', 400),
  ascend('910B3', 65536, 'hccs', 400),
  ascend('910B4', 32768, 'hccs', 350),
  ascend('310P3', 21527, 'pcie', 150),
]);

export function lookupAccelerator(product: string): CatalogAccelerator | undefined {
  const key = Object.keys(ACCELERATOR_CATALOG).find((k) => k.toLowerCase() === product.toLowerCase());
  return key ? ACCELERATOR_CATALOG[key] : undefined;
}

/** Within this fraction of a catalogued product's memory, a GPU counts as that product's memory class. */
const MEMORY_CLASS_TOLERANCE = 0.02;

/** MIG-capable catalogued products: their memory as reported and their MIG geometry. */
const MIG_MEMORY_CLASSES: ReadonlyArray<{ memoryMib: number; geometry: MigGeometry }> = Object.entries(ACCELERATOR_CATALOG).flatMap(
  ([product, { memoryMib }]) => {
    const geometry = migGeometryForProduct(product, memoryMib);
    return geometry ? [{ memoryMib, geometry }] : [];
  },
);

/**
 * The MIG geometry of a GPU known only by its memory (MiB as the driver reports it): that of the
 * MIG-capable catalogued product closest in memory, within a few percent. Undefined: no such product.
 */
export function migGeometryForMemory(memoryMib: number): MigGeometry | undefined {
  let best: { distance: number; geometry: MigGeometry } | undefined;
  for (const { memoryMib: classMib, geometry } of MIG_MEMORY_CLASSES) {
    const distance = Math.abs(classMib - memoryMib) / classMib;
    if (distance <= MEMORY_CLASS_TOLERANCE && (!best || distance < best.distance)) best = { distance, geometry };
  }
  return best?.geometry;
}

/** The memory classes migGeometryForMemory knows, in GB, smallest first. */
export function migMemoryClassesGb(): number[] {
  return [...new Set(MIG_MEMORY_CLASSES.map((c) => c.geometry.memoryGb))].sort((a, b) => a - b);
}
