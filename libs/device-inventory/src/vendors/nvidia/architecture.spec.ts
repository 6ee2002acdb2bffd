import { resolveNvidiaArchitecture } from './architecture';

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
