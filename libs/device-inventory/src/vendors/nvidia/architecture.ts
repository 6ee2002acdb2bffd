import { nvidiaArchitectureOf, nvidiaFamilyOfComputeCapability } from '../../catalog';

/**
 * Family and compute capability for an accelerator: a printed compute capability wins over the
 * table; the family comes from the product name, else from the compute capability, else "".
 */
export function resolveNvidiaArchitecture(
  product: string,
  printedComputeCapability?: string,
): { family: string; computeCapability?: string } {
  const known = nvidiaArchitectureOf(product);
  const computeCapability = printedComputeCapability ?? known?.computeCapability;
  const family =
    known?.family ?? (computeCapability ? nvidiaFamilyOfComputeCapability(computeCapability) : undefined) ?? '';
  return computeCapability === undefined ? { family } : { family, computeCapability };
}
