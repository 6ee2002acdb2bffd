import { describeArmCore } from './arm-cpu';
import { parseCpuinfo } from './cpuinfo';

describe('parsing /proc/cpuinfo', () => {
  it('counts physical cores from distinct physical id/core id pairs, not siblings', () => {
    const block = (processor: number, pkg: number, core: number) =>
      `processor\t: ${processor}\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R)   Platinum 8480+\nphysical id\t: ${pkg}\ncore id\t\t: ${core}\ncpu cores\t: 2\n`;
    const text = [block(0, 0, 0), block(1, 0, 1), block(2, 1, 0), block(3, 1, 1), block(4, 0, 0)].join('\n');
    expect(parseCpuinfo(text)).toEqual({
      vendor: 'GenuineIntel',
      model: 'Intel(R) Xeon(R) Platinum 8480+',
      logicalCpus: 5,
      sockets: 2,
      cores: 4,
    });
  });

  it('leaves sockets and cores to sysfs when aarch64 cpuinfo lacks them', () => {
    const text = 'processor\t: 0\nCPU implementer\t: 0x48\nCPU part\t: 0xd01\n\nprocessor\t: 1\nCPU implementer\t: 0x48\nCPU part\t: 0xd01\n';
    expect(parseCpuinfo(text)).toEqual({ vendor: 'HiSilicon', model: 'Kunpeng-920', logicalCpus: 2 });
  });

  it('ignores trailing blocks that are not processors', () => {
    const text = 'processor\t: 0\nmodel name\t: ARMv8 Processor rev 1 (v8l)\n\nHardware\t: BCM2835\nSerial\t\t: 100000001\n';
    expect(parseCpuinfo(text).logicalCpus).toBe(1);
  });

  it('keeps unknown ARM parts readable', () => {
    expect(describeArmCore('0x41', '0xfff')).toEqual({ vendor: 'ARM', model: 'ARM part 0xfff' });
    expect(describeArmCore(undefined, '0xd4f')).toBeUndefined();
  });
});
