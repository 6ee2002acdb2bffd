import { nvidiaArchitectureOf, resolveNvidiaArchitecture } from './architecture';

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

describe('resolveNvidiaArchitecture', () => {
  it('a printed compute capability wins over the table', () => {
    expect(resolveNvidiaArchitecture('NVIDIA RTX A6000', '8.6')).toEqual({ family: 'ampere', computeCapability: '8.6' });
  });

  it('an old driver that prints no compute_cap gets it from the product name', () => {
    expect(resolveNvidiaArchitecture('Tesla V100-SXM2-32GB')).toEqual({ family: 'volta', computeCapability: '7.0' });
  });

  it('a product the table does not know takes its family from the printed compute capability', () => {
    expect(resolveNvidiaArchitecture('Quadro K2200', '5.0')).toEqual({ family: 'maxwell', computeCapability: '5.0' });
  });

  it('knowing neither leaves the family empty and the capability absent', () => {
    expect(resolveNvidiaArchitecture('NVIDIA DGX Display')).toEqual({ family: '' });
  });
});
