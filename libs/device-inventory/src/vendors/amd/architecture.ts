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
