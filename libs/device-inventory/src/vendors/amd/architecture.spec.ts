import { amdFamilyOf, normalizeGfxTarget } from './architecture';

describe('amdFamilyOf', () => {
  it.each([
    ['AMD Instinct MI300X', undefined, 'cdna3'],
    ['AMD Instinct MI325X', undefined, 'cdna3'],
    ['AMD Instinct MI308X', 'gfx942', 'cdna3'],
    ['AMD Instinct MI355X', 'gfx950', 'cdna4'],
    ['AMD Instinct MI250X', undefined, 'cdna2'],
    ['AMD Instinct MI210', 'gfx90a', 'cdna2'],
    ['AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2', undefined, 'cdna2'],
    ['Arcturus GL-XL [AMD Instinct MI100]', undefined, 'cdna1'],
    ['Radeon RX 7900 XT', 'gfx1100', 'rdna3'],
    ['Navi 21 [Radeon RX 6800/6800 XT / 6900 XT]', 'gfx1030', 'rdna2'],
  ])('%s (%s) is %s', (product, gfx, family) => {
    expect(amdFamilyOf(product, gfx)).toBe(family);
  });

  it('a product and target it does not know has no family', () => {
    expect(amdFamilyOf('Phoenix3', 'gfx1103')).toBe('rdna3');
    expect(amdFamilyOf('Mystery board')).toBe('');
  });
});

describe('normalizeGfxTarget', () => {
  it("repairs rocm-smi's decimal stepping: gfx9010 is gfx90a", () => {
    expect(normalizeGfxTarget('gfx9010')).toBe('gfx90a');
    expect(normalizeGfxTarget('gfx9012')).toBe('gfx90c');
  });

  it('leaves proper names alone, GFX10+ four-digit names included', () => {
    expect(normalizeGfxTarget('gfx942')).toBe('gfx942');
    expect(normalizeGfxTarget('gfx1100')).toBe('gfx1100');
    expect(normalizeGfxTarget('GFX90A')).toBe('gfx90a');
  });

  it('drops feature suffixes and refuses what is not a target', () => {
    expect(normalizeGfxTarget('gfx90a:sramecc+:xnack-')).toBe('gfx90a');
    expect(normalizeGfxTarget('N/A')).toBeUndefined();
  });
});
