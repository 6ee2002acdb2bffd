/**
 * NVIDIA product name -> architecture family and compute capability. Used when nvidia-smi does
 * not print compute_cap (drivers before R510), and to name the family, which no tool prints.
 */
export interface NvidiaArchitecture {
  /** Lower case, e.g. "hopper", "ada-lovelace". */
  family: string;
  /** e.g. "9.0" */
  computeCapability: string;
}

/**
 * Patterns use word boundaries so that "H20" does not match "H200", "A10" not "A100",
 * "L4" not "L40". The first match wins; more specific names come first.
 */
const PRODUCTS: ReadonlyArray<readonly [RegExp, string, string]> = [
  [/\bG?B300\b/i, 'blackwell', '10.3'],
  [/\bG?B(100|200)\b/i, 'blackwell', '10.0'],
  [/RTX PRO \d+ Blackwell|RTX 50\d0/i, 'blackwell', '12.0'],
  [/\bGH200\b|\bH(100|200|800)\b|\bH20\b/i, 'hopper', '9.0'],
  [/RTX \d000 Ada|\bL40S?\b|\bL4\b|\bL20\b|RTX 40\d0/i, 'ada-lovelace', '8.9'],
  [/\bA(100|800|30)\b/i, 'ampere', '8.0'],
  [/\bA(40|16|10G?|2)\b|RTX A\d{4}|RTX 30\d0/i, 'ampere', '8.6'],
  [/\bV100/i, 'volta', '7.0'],
  [/\bT4\b|RTX 20\d0|Quadro RTX|TITAN RTX/i, 'turing', '7.5'],
  [/\bP100\b/i, 'pascal', '6.0'],
  [/\bP40\b|\bP4\b|GTX 10\d0/i, 'pascal', '6.1'],
  [/\bK80\b/i, 'kepler', '3.7'],
];

/** The architecture a product name belongs to, or undefined for a product not in the table. */
export function nvidiaArchitectureOf(product: string): NvidiaArchitecture | undefined {
  for (const [pattern, family, computeCapability] of PRODUCTS) {
    if (pattern.test(product)) return { family, computeCapability };
  }
  return undefined;
}

/** Family from a printed compute capability, for products the table does not know. */
export function nvidiaFamilyOfComputeCapability(computeCapability: string): string | undefined {
  const [major, minor] = computeCapability.split('.').map(Number);
  if (!Number.isInteger(major)) return undefined;
  if (major === 3) return 'kepler';
  if (major === 5) return 'maxwell';
  if (major === 6) return 'pascal';
  if (major === 7) return minor === 5 ? 'turing' : 'volta';
  if (major === 8) return minor === 9 ? 'ada-lovelace' : 'ampere';
  if (major === 9) return 'hopper';
  if (major >= 10 && major <= 12) return 'blackwell';
  return undefined;
}

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
