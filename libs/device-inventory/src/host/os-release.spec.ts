import { machineArchitecture } from './architecture';
import { parseMeminfo } from './meminfo';
import { osIdentity } from './os-release';

describe('OS identity', () => {
  it('joins ID and VERSION_ID, unquoting either quote style', () => {
    expect(osIdentity('ID="rhel"\nVERSION_ID=\'9.4\'\n')).toBe('linux/rhel-9.4');
  });
  it('drops the version for rolling releases and says just linux without os-release', () => {
    expect(osIdentity('ID=arch\nBUILD_ID=rolling\n')).toBe('linux/arch');
    expect(osIdentity(undefined)).toBe('linux');
  });
});

describe('memory and architecture', () => {
  it('converts meminfo kB to MiB and tolerates a missing MemAvailable (kernels before 3.14)', () => {
    expect(parseMeminfo('MemTotal:       2097152 kB\nMemFree:   1 kB\n')).toEqual({ totalMib: 2048 });
  });
  it('rejects meminfo without MemTotal', () => {
    expect(() => parseMeminfo('MemFree: 1 kB\n')).toThrow(/MemTotal/);
  });
  it('maps Node.js arch names to machine names', () => {
    expect(machineArchitecture('x64')).toBe('x86_64');
    expect(machineArchitecture('arm64')).toBe('aarch64');
  });
});
