/**
 * AMD product name / gfx target -> architecture family. The family comes from the product when it
 * names an Instinct generation, else from the gfx target, else "".
 */
const PRODUCTS: ReadonlyArray<readonly [RegExp, string]> = [
  [/\bMI35\d/i, 'cdna4'],
  [/\bMI3\d\d/i, 'cdna3'], // MI300X, MI300A, MI308X, MI325X
  [/\bMI2\d\d/i, 'cdna2'], // MI210, MI250, MI250X; rocm-smi prints "MI200 (MCM)"
  [/\bMI100\b/i, 'cdna1'],
  [/\bMI(50|60)\b/i, 'gcn5'],
];

const GFX_TARGETS: ReadonlyArray<readonly [RegExp, string]> = [
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

export function amdFamilyOf(product: string, gfxTarget?: string): string {
  for (const [pattern, family] of PRODUCTS) if (pattern.test(product)) return family;
  if (gfxTarget !== undefined) {
    for (const [pattern, family] of GFX_TARGETS) if (pattern.test(gfxTarget)) return family;
  }
  return '';
}

/**
 * The LLVM target name, e.g. "gfx942". Drops feature suffixes ("gfx90a:sramecc+:xnack-") and
 * repairs rocm-smi's spelling of GFX9 steppings above 9: it prints the stepping in decimal, so
 * gfx90a (9.0.10) comes out as "gfx9010". A GFX9 name with four digits can only be that.
 */
export function normalizeGfxTarget(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const target = raw.trim().toLowerCase().split(':')[0];
  if (!/^gfx[0-9a-f]+$/.test(target)) return undefined;
  const decimalStepping = /^gfx9(\d)(\d{2})$/.exec(target);
  if (decimalStepping) return `gfx9${decimalStepping[1]}${Number(decimalStepping[2]).toString(16)}`;
  return target;
}
