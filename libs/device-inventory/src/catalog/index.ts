/**
 * Accelerator product knowledge, one table per fact: architecture families and compute
 * capabilities by product name, MIG geometry by product, and the well-known products' specs.
 */
export {
  ACCELERATOR_CATALOG,
  lookupAccelerator,
  migGeometryForMemory,
  migMemoryClassesGb,
  type CatalogAccelerator,
  type Interconnect,
} from './accelerators';
export {
  amdFamilyOf,
  ascendFamilyOf,
  nvidiaArchitectureOf,
  nvidiaFamilyOfComputeCapability,
  type NvidiaArchitecture,
} from './architectures';
export {
  MIG_CATALOGUE,
  migGeometryForProduct,
  migProfileIndex,
  migProfileMemoryMib,
  normalizeMigProfileName,
  sliceMask,
  type MigGeometry,
  type MigProfile,
} from './mig-profiles';
