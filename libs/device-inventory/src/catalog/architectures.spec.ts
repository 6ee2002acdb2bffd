import { amdFamilyOf, ascendFamilyOf, nvidiaArchitectureOf } from './architectures';

describe('nvidiaArchitectureOf', () => {
  it.each([
    ['NVIDIA H100 80GB HBM3', 'hopper', '9.0'],
    ['NVIDIA H200', 'hopper', '9.0'],
    ['NVIDIA GH200 480GB', 'hopper', '9.0'],
    ['NVIDIA H20-3e', 'hopper', '9.0'],
    ['NVIDIA H800', 'hopper', '9.0'],
    ['NVIDIA A100-SXM4-80GB', 'ampere', '8.0'],
    ['NVIDIA A100 80GB PCIe', 'ampere', '8.0'],
    ['NVIDIA A800-SXM4-80GB', 'ampere', '8.0'],
    ['NVIDIA A30', 'ampere', '8.0'],
    ['NVIDIA A10', 'ampere', '8.6'],
    ['NVIDIA A10G', 'ampere', '8.6'],
    ['NVIDIA A40', 'ampere', '8.6'],
    ['NVIDIA A16', 'ampere', '8.6'],
    ['NVIDIA A2', 'ampere', '8.6'],
    ['NVIDIA RTX A6000', 'ampere', '8.6'],
    ['NVIDIA GeForce RTX 3080', 'ampere', '8.6'],
    ['NVIDIA L40S', 'ada-lovelace', '8.9'],
    ['NVIDIA L40', 'ada-lovelace', '8.9'],
    ['NVIDIA L4', 'ada-lovelace', '8.9'],
    ['NVIDIA GeForce RTX 4090', 'ada-lovelace', '8.9'],
    ['NVIDIA RTX 6000 Ada Generation', 'ada-lovelace', '8.9'],
    ['NVIDIA B200', 'blackwell', '10.0'],
    ['NVIDIA GB200', 'blackwell', '10.0'],
    ['NVIDIA B100', 'blackwell', '10.0'],
    ['NVIDIA RTX PRO 6000 Blackwell Server Edition', 'blackwell', '12.0'],
    ['Tesla V100-SXM2-32GB', 'volta', '7.0'],
    ['Tesla T4', 'turing', '7.5'],
  ])('%s is %s (%s)', (product, family, computeCapability) => {
    expect(nvidiaArchitectureOf(product)).toEqual({ family, computeCapability });
  });

  it('"H20" does not swallow "H200", nor "A10" "A100", nor "L4" "L40"', () => {
    expect(nvidiaArchitectureOf('NVIDIA H200')?.computeCapability).toBe('9.0');
    expect(nvidiaArchitectureOf('NVIDIA A100-PCIE-40GB')?.computeCapability).toBe('8.0');
    expect(nvidiaArchitectureOf('NVIDIA L40')?.family).toBe('ada-lovelace');
  });

  it('an unknown product has no architecture', () => {
    expect(nvidiaArchitectureOf('NVIDIA DGX Display')).toBeUndefined();
  });
});

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

describe('ascendFamilyOf', () => {
  it.each([
    ['910B3', 'ascend910'],
    ['Ascend910', 'ascend910'],
    ['310P3', 'ascend310'],
  ])('%s is of %s', (name, family) => {
    expect(ascendFamilyOf(name)).toBe(family);
  });
});
