import { MIG_CATALOGUE, MigGeometry, migGeometryForProduct, migProfileIndex, migProfileMemoryMib, sliceMask } from './mig-profiles';

function placeable(geometry: MigGeometry, profile: string, occupied: number): number {
  const index = migProfileIndex(geometry, profile);
  if (index < 0) throw new Error(`${geometry.key} has no ${profile}`);
  return geometry.profiles[index].placeableByMask[occupied];
}

describe('MIG profile catalogue', () => {
  it.each([
    ['NVIDIA A100-SXM4-80GB', undefined, 'A100-80GB'],
    ['NVIDIA A100 80GB PCIe', undefined, 'A100-80GB'],
    ['NVIDIA A100-SXM4-40GB', undefined, 'A100-40GB'],
    ['NVIDIA A100-PCIE-40GB', undefined, 'A100-40GB'],
    ['A100-SXM4-40GB', undefined, 'A100-40GB'],
    ['NVIDIA A30', undefined, 'A30-24GB'],
    ['NVIDIA H100 80GB HBM3', undefined, 'H100-80GB'],
    ['NVIDIA H100 PCIe', 81_559, 'H100-80GB'],
    ['NVIDIA H100 NVL', undefined, 'H100-94GB'],
    ['NVIDIA H100', 95_830, 'H100-94GB'],
    ['NVIDIA H800', undefined, 'H100-80GB'],
    ['NVIDIA GH200 480GB', undefined, 'H100-96GB'],
    ['NVIDIA GH200 144G HBM3e', undefined, 'GH200-144GB'],
    ['NVIDIA H20', undefined, 'H20-96GB'],
    ['NVIDIA H200', undefined, 'H200-141GB'],
    ['NVIDIA H200 NVL', undefined, 'H200-141GB'],
    ['NVIDIA B200', undefined, 'B200-180GB'],
    ['NVIDIA GB200', undefined, 'GB200-186GB'],
  ])('looks up "%s" (memory %s MiB) as %s', (product, memoryMib, key) => {
    expect(migGeometryForProduct(product, memoryMib)?.key).toBe(key);
  });

  it.each(['NVIDIA L40S', 'NVIDIA GeForce RTX 4090', 'AMD Instinct MI300X', 'Tesla V100-SXM2-32GB'])(
    'has no MIG geometry for %s',
    (product) => {
      expect(migGeometryForProduct(product)).toBeUndefined();
    },
  );

  it('names profiles by memory for each product', () => {
    const names = (key: string) => MIG_CATALOGUE[key].profiles.map((p) => p.name);
    expect(names('A100-40GB')).toEqual(['1g.5gb', '1g.5gb+me', '1g.10gb', '2g.10gb', '3g.20gb', '4g.20gb', '7g.40gb']);
    expect(names('H100-94GB')).toEqual(['1g.12gb', '1g.12gb+me', '1g.24gb', '2g.24gb', '3g.47gb', '4g.47gb', '7g.94gb']);
    expect(names('H200-141GB')).toEqual(['1g.18gb', '1g.18gb+me', '1g.35gb', '2g.35gb', '3g.71gb', '4g.71gb', '7g.141gb']);
    expect(names('H20-96GB')).toEqual(['1g.12gb', '1g.12gb+me', '1g.24gb', '2g.24gb', '3g.48gb', '4g.48gb', '7g.96gb']);
    expect(names('B200-180GB')).toEqual(['1g.23gb', '1g.23gb+me', '1g.45gb', '2g.45gb', '3g.90gb', '4g.90gb', '7g.180gb']);
    expect(names('A30-24GB')).toEqual(['1g.6gb', '1g.6gb+me', '2g.12gb', '2g.12gb+me', '4g.24gb']);
  });

  it('an empty 8-slice GPU holds 7 × 1g, 4 × 1g double-memory, 3 × 2g, 2 × 3g, 1 × 4g, 1 × 7g and one media partition', () => {
    const h100 = MIG_CATALOGUE['H100-80GB'];
    expect(h100.profiles.map((p) => [p.name, p.placeableByMask[0]])).toEqual([
      ['1g.10gb', 7], ['1g.10gb+me', 1], ['1g.20gb', 4], ['2g.20gb', 3], ['3g.40gb', 2], ['4g.40gb', 1], ['7g.80gb', 1],
    ]);
  });

  it('an empty A30 holds 4 × 1g.6gb, 2 × 2g.12gb and 1 × 4g.24gb', () => {
    const a30 = MIG_CATALOGUE['A30-24GB'];
    expect(a30.memorySlices).toBe(4);
    expect(['1g.6gb', '2g.12gb', '4g.24gb'].map((p) => placeable(a30, p, 0))).toEqual([4, 2, 1]);
    expect(placeable(a30, '2g.12gb', sliceMask(1, 1))).toBe(1);
  });

  it('a 3g.40gb at start 4 leaves one 3g.40gb, one 4g.40gb, four 1g.10gb and no 7g.80gb', () => {
    const a100 = MIG_CATALOGUE['A100-80GB'];
    const occupied = sliceMask(4, 4);
    expect(placeable(a100, '3g.40gb', occupied)).toBe(1);
    expect(placeable(a100, '4g.40gb', occupied)).toBe(1);
    expect(placeable(a100, '1g.10gb', occupied)).toBe(4);
    expect(placeable(a100, '7g.80gb', occupied)).toBe(0);
  });

  it('a 1g.10gb at start 1 blocks 3g.40gb and 4g.40gb at start 0; 2g.20gb keeps starts 2 and 4', () => {
    const h100 = MIG_CATALOGUE['H100-80GB'];
    const occupied = sliceMask(1, 1);
    expect(placeable(h100, '3g.40gb', occupied)).toBe(1);
    expect(placeable(h100, '2g.20gb', occupied)).toBe(2);
    expect(placeable(h100, '4g.40gb', occupied)).toBe(0);
  });

  it('slice 7 is reachable only by 1g.20gb at start 6 (and 7g): three 2g.20gb leave one 1g.20gb', () => {
    const h100 = MIG_CATALOGUE['H100-80GB'];
    const occupied = sliceMask(0, 2) | sliceMask(2, 2) | sliceMask(4, 2);
    expect(placeable(h100, '1g.20gb', occupied)).toBe(1);
    expect(placeable(h100, '1g.10gb', occupied)).toBe(1);
    expect(placeable(h100, '2g.20gb', occupied)).toBe(0);
  });

  it('looks profiles up the way nvidia-smi prints them', () => {
    const h100 = MIG_CATALOGUE['H100-80GB'];
    expect(migProfileIndex(h100, 'MIG 3g.40gb')).toBe(migProfileIndex(h100, '3g.40gb'));
    expect(migProfileIndex(h100, '3G.40GB')).toBeGreaterThanOrEqual(0);
    expect(migProfileIndex(h100, '3g.20gb')).toBe(-1);
  });
});

describe('migProfileMemoryMib', () => {
  it.each([
    ['1g.10gb', 10240],
    ['1g.10gb+me', 10240],
    ['1c.3g.40gb', 40960],
    ['7g.80gb', 81920],
    ['1g.5gb', 5120],
  ])('%s is %i MiB nominal', (profile, mib) => {
    expect(migProfileMemoryMib(profile)).toBe(mib);
  });

  it('a profile without a size is unknown', () => {
    expect(migProfileMemoryMib('weird')).toBeUndefined();
  });
});
