import * as path from 'node:path';
import { readHostInfo } from './host-info';
import { HostProvider } from './host-provider';

const fixture = (name: string) => path.join(__dirname, '__fixtures__', name);

describe('reading host facts from a mounted host tree', () => {
  it('reads a 2-socket AMD EPYC 9654 box: 192 cores, 384 logical CPUs, 2 NUMA nodes', async () => {
    const host = await readHostInfo(fixture('epyc-9654-ndr'), { nodeArch: 'x64' });
    expect(host.cpu).toEqual({
      vendor: 'AuthenticAMD',
      model: 'AMD EPYC 9654 96-Core Processor',
      architecture: 'x86_64',
      sockets: 2,
      cores: 192,
      logicalCpus: 384,
      numaNodes: 2,
    });
    expect(host.memory).toEqual({ totalMib: 1547689, availableMib: 1514912 });
    expect(host.os).toBe('linux/ubuntu-22.04');
    expect(host.kernel).toBe('5.15.0-105-generic');
  });

  it('names an aarch64 Grace CPU from its implementer/part ids and counts cores from sysfs topology', async () => {
    const host = await readHostInfo(fixture('grace-roce'), { nodeArch: 'arm64' });
    expect(host.cpu).toEqual({
      vendor: 'ARM',
      model: 'Neoverse-V2',
      architecture: 'aarch64',
      sockets: 1,
      cores: 72,
      logicalCpus: 72,
      numaNodes: 1,
    });
    expect(host.os).toBe('linux/ubuntu-24.04');
    expect(host.kernel).toBe('6.8.0-1013-nvidia-64k');
  });

  it('falls back to /usr/lib/os-release and one NUMA node on a small VM', async () => {
    const host = await readHostInfo(fixture('no-infiniband'), { nodeArch: 'x64' });
    expect(host.os).toBe('linux/rocky-9.3');
    expect(host.cpu).toMatchObject({ vendor: 'GenuineIntel', sockets: 1, cores: 2, logicalCpus: 4, numaNodes: 1 });
    expect(host.memory.totalMib).toBe(15720);
  });

  it('measures local storage of the configured path', async () => {
    const host = await readHostInfo(fixture('no-infiniband'), { storagePath: __dirname });
    expect(host.localStorageGib).toBeGreaterThan(0);
  });

  it('reports 0 GiB of local storage when the path cannot be measured', async () => {
    const host = await readHostInfo(fixture('no-infiniband'), { storagePath: '/does/not/exist' });
    expect(host.localStorageGib).toBe(0);
  });

  it('fails with the path it looked for when /proc is not mounted', async () => {
    await expect(readHostInfo(fixture('ib-down-port'))).rejects.toThrow(/proc\/cpuinfo does not exist/);
  });
});

describe('HostProvider', () => {
  it('is available where /proc/cpuinfo exists and its pass owns no devices', async () => {
    const provider = new HostProvider(fixture('epyc-9654-ndr'));
    expect(provider.name).toBe('host');
    expect(await provider.available()).toBe(true);
    expect(await provider.detect()).toEqual({});
  });

  it('is unavailable, and its pass fails, without a host /proc', async () => {
    const provider = new HostProvider(fixture('ib-down-port'));
    expect(await provider.available()).toBe(false);
    await expect(provider.detect()).rejects.toThrow(/cpuinfo/);
  });
});
