import { AcceleratorVendor } from '@gpufleet/contracts';
import { lookupAccelerator, migGeometryForMemory, migMemoryClassesGb } from './accelerators';

describe('accelerator catalog', () => {
  it.each([
    ['NVIDIA H100 NVL', 'hopper', '9.0', true],
    ['nvidia a30', 'ampere', '8.0', true],
    ['NVIDIA A10', 'ampere', '8.6', false],
    ['NVIDIA L40S', 'ada-lovelace', '8.9', false],
    ['AMD Instinct MI300X', 'cdna3', 'gfx942', false],
    ['910B3', 'ascend910', undefined, false],
  ])('%s is %s (%s), MIG %s', (product, family, computeCapability, migCapable) => {
    const accelerator = lookupAccelerator(product);
    expect([accelerator?.family, accelerator?.computeCapability, accelerator?.migCapable]).toEqual([family, computeCapability, migCapable]);
  });

  it('knows the vendor and memory of a product, but not of one it does not list', () => {
    expect(lookupAccelerator('NVIDIA H200')).toMatchObject({ vendor: AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA, memoryMib: 143771 });
    expect(lookupAccelerator('NVIDIA DGX Display')).toBeUndefined();
  });
});

describe('MIG geometry by memory', () => {
  it('matches GPUs by memory class', () => {
    expect(migGeometryForMemory(81559)?.memoryGb).toBe(80);
    expect(migGeometryForMemory(81920)?.memoryGb).toBe(80);
    expect(migGeometryForMemory(143771)?.profiles.map((p) => p.name)).toContain('3g.71gb');
    expect(migGeometryForMemory(24576)?.memorySlices).toBe(4);
    expect(migGeometryForMemory(46068)).toBeUndefined();
  });

  it('knows the memory classes of the catalogued MIG-capable products', () => {
    expect(migMemoryClassesGb()).toEqual([24, 40, 80, 94, 96, 141, 180]);
  });
});
