import { AcceleratorVendor, PoolIdentity } from '@gpufleet/contracts';
import { accelerator, L40S, nodeInventory } from './__fixtures__/inventories';
import { dominantProduct, poolBaseName, poolIdentityHash, poolIdentityOf, PoolNames, poolIdentityKey } from './pools';

const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

function identity(overrides: Partial<PoolIdentity> = {}): PoolIdentity {
  return {
    cpu: 'GenuineIntel Intel(R) Xeon(R) Platinum 8480+',
    acceleratorVendor: AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA,
    acceleratorProduct: 'NVIDIA H100 80GB HBM3',
    os: 'linux/ubuntu-22.04',
    architecture: 'x86_64',
    ...overrides,
  };
}

describe('pool identity', () => {
  it('is CPU vendor + model, accelerator vendor + product, OS and architecture', () => {
    expect(poolIdentityOf(nodeInventory('n1'))).toEqual(identity());
  });

  it('a CPU-only node has an empty product and unspecified vendor', () => {
    expect(poolIdentityOf(nodeInventory('n1', { gpus: 0 }))).toMatchObject({
      acceleratorProduct: '',
      acceleratorVendor: AcceleratorVendor.ACCELERATOR_VENDOR_UNSPECIFIED,
    });
  });

  it('mixed accelerators: the product most of them are wins, ties go to the alphabetically first', () => {
    const h100 = (i: number) => accelerator(i);
    const l40s = (i: number) => accelerator(i, L40S);
    expect(dominantProduct([h100(0), l40s(1), l40s(2)])?.product).toBe(L40S.product);
    expect(dominantProduct([l40s(0), h100(1)])?.product).toBe('NVIDIA H100 80GB HBM3');
    expect(dominantProduct([h100(0), l40s(1)])?.product).toBe('NVIDIA H100 80GB HBM3');
  });
});

describe('pool names', () => {
  it.each([
    [identity(), 'h100-80gb-hbm3-x86-64'],
    [identity({ acceleratorProduct: 'NVIDIA A100-SXM4-80GB', architecture: 'aarch64' }), 'a100-sxm4-80gb-aarch64'],
    [identity({ acceleratorProduct: 'AMD Instinct MI300X', acceleratorVendor: AcceleratorVendor.ACCELERATOR_VENDOR_AMD }), 'instinct-mi300x-x86-64'],
    [identity({ acceleratorProduct: '', cpu: 'AuthenticAMD AMD EPYC 9654 96-Core Processor' }), 'cpu-amd-epyc-9654-96-core-x86-64'],
    [identity({ acceleratorProduct: '', cpu: 'Intel Intel(R) Xeon(R) Gold 6430 CPU @ 2.10GHz' }), 'cpu-intel-xeon-gold-6430-x86-64'],
    [identity({ acceleratorProduct: '', cpu: '', architecture: '' }), 'cpu'],
  ])('names %j "%s"', (id, name) => {
    expect(poolBaseName(id)).toBe(name);
  });

  it('are DNS labels even for long, odd product names', () => {
    const name = poolBaseName(identity({ acceleratorProduct: `NVIDIA ${'Very Long Product Name '.repeat(8)}/ rev. 2.0 ®` }));
    expect(name).toMatch(DNS_LABEL);
    expect(name.length).toBeLessThanOrEqual(63 - 7);
  });

  it('the first identity gets the plain name, a colliding one the name plus a hash of its identity', () => {
    const names = new PoolNames();
    const intel = identity();
    const amd = identity({ cpu: 'AuthenticAMD AMD EPYC 9654 96-Core Processor' });
    expect(names.assign(poolIdentityKey(intel), intel)).toBe('h100-80gb-hbm3-x86-64');
    const suffixed = names.assign(poolIdentityKey(amd), amd);
    expect(suffixed).toBe(`h100-80gb-hbm3-x86-64-${poolIdentityHash(amd)}`);
    expect(suffixed).toMatch(DNS_LABEL);
    expect(names.assign(poolIdentityKey(amd), amd)).toBe(suffixed);
  });

  it('a released name goes to the next identity that claims it', () => {
    const names = new PoolNames();
    const intel = identity();
    const amd = identity({ cpu: 'AuthenticAMD AMD EPYC 9654 96-Core Processor' });
    names.assign(poolIdentityKey(intel), intel);
    names.release(poolIdentityKey(intel));
    expect(names.assign(poolIdentityKey(amd), amd)).toBe('h100-80gb-hbm3-x86-64');
  });

  it('a pinned name is reserved for its identity', () => {
    const intel = identity();
    const amd = identity({ cpu: 'AuthenticAMD AMD EPYC 9654 96-Core Processor' });
    const names = new PoolNames([{ identity: intel, name: 'h100-80gb-hbm3-x86-64' }]);
    expect(names.assign(poolIdentityKey(amd), amd)).toBe(`h100-80gb-hbm3-x86-64-${poolIdentityHash(amd)}`);
    expect(names.assign(poolIdentityKey(intel), intel)).toBe('h100-80gb-hbm3-x86-64');
  });
});
