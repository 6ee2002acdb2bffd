import { normalizeGfxTarget } from './architecture';

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
