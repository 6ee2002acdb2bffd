import { acceleratorUnitCounts, cpuUnitSizes, instanceTypeFamily } from './instance-types';

describe('InstanceType families', () => {
  it.each([
    [1, [1]],
    [2, [1, 2]],
    [6, [1, 2, 4, 6]],
    [8, [1, 2, 4, 8]],
    [10, [1, 2, 4, 8, 10]],
    [16, [1, 2, 4, 8, 16]],
  ])('a largest node of %i accelerators gives units of %j', (largest, units) => {
    expect(acceleratorUnitCounts(largest)).toEqual(units);
  });

  it.each([
    [2, [2]],
    [4, [4]],
    [48, [4, 8, 16, 32, 48]],
    [192, [4, 8, 16, 32, 64, 128, 192]],
  ])('a largest CPU node of %i vCPU gives units of %j vCPU', (largest, units) => {
    expect(cpuUnitSizes(largest)).toEqual(units);
  });

  it('units of a pool whose nodes differ in accelerator count reach the largest node', () => {
    const shape = (accelerators: number, logicalCpus: number) => ({
      accelerators,
      logicalCpus,
      memoryMib: accelerators * 100_000,
      localStorageGib: 1_000,
      acceleratorMemoryMib: 81_559,
    });
    const family = instanceTypeFamily('pool', false, [shape(4, 64), shape(8, 224)]);
    expect(family.map((m) => [m.name, m.unit.vcpu, m.unit.memoryMib, m.unit.localStorageGib])).toEqual([
      ['pool.1x', 16, 100_000, 125],
      ['pool.2x', 32, 200_000, 250],
      ['pool.4x', 64, 400_000, 500],
      ['pool.8x', 128, 800_000, 1_000],
    ]);
  });
});
