/**
 * Product name -> architecture family (and, for NVIDIA, compute capability), per vendor. No tool
 * prints the family; nvidia-smi before R510 does not print compute_cap either.
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
const NVIDIA_PRODUCTS: ReadonlyArray<readonly [RegExp, string, string]> = [
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

/** The architecture an NVIDIA product name belongs to, or undefined for a product not in the table. */
export function nvidiaArchitectureOf(product: string): NvidiaArchitecture | undefined {
  for (const [pattern, family, computeCapability] of NVIDIA_PRODUCTS) {
    if (pattern.test(product)) return { family, computeCapability };
  }
  return undefined;
}

/** NVIDIA family from a compute capability, for products the table does not know. */
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

const AMD_PRODUCTS: ReadonlyArray<readonly [RegExp, string]> = [
  [/\bMI35\d/i, 'cdna4'],
  [/\bMI3\d\d/i, 'cdna3'], // MI300X, MI300A, MI308X, MI325X
  [/\bMI2\d\d/i, 'cdna2'], // MI210, MI250, MI250X; rocm-smi prints "MI200 (MCM)"
  [/\bMI100\b/i, 'cdna1'],
  [/\bMI(50|60)\b/i, 'gcn5'],
];

const AMD_GFX_TARGETS: ReadonlyArray<readonly [RegExp, string]> = [
  [/^gfx95\d$/, 'cdna4'],
  [/^gfx94\d$/, 'cdna3'],
  [/^gfx90a$/, 'cdna2'],
  [/^gfx908$/, 'cdna1'],
  [/^gfx90[06]$/, 'gcn5'],
  [/^gfx12\d\d$/, 'rdna4'],
  [/^gfx11\d\d$/, 'rdna3'],
  [/^gfx103\d$/, 'rdna2'],
  [/^gfx101\d$/, 'rdna1'],
];

/**
 * AMD family: from the product when it names an Instinct generation, else from the gfx target
 * (a normalized LLVM target name such as "gfx942"), else "".
 */
export function amdFamilyOf(product: string, gfxTarget?: string): string {
  for (const [pattern, family] of AMD_PRODUCTS) if (pattern.test(product)) return family;
  if (gfxTarget !== undefined) {
    for (const [pattern, family] of AMD_GFX_TARGETS) if (pattern.test(gfxTarget)) return family;
  }
  return '';
}

/** "ascend910" for the 910 line (910, 910B, 910C), "ascend310" for 310 / 310P; else "". */
export function ascendFamilyOf(name: string): string {
  const series = /(910|310)/.exec(name)?.[1];
  return series === undefined ? '' : `ascend${series}`;
}
