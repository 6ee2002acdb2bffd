import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AcceleratorVendor, LinkType } from '@gpufleet/contracts';
import { exitError, missingTool, scriptedRunner } from '../shared/scripted-runner';
import { NvidiaProvider } from './nvidia-provider';

const fixture = (name: string): string => readFileSync(join(__dirname, '__fixtures__', name), 'utf8');

const versions = (driver: string, cuda: string): string =>
  `\n==============NVSMI LOG==============\n\nDriver Version                            : ${driver}\nCUDA Version                              : ${cuda}\n`;

const QUERY = 'nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.used,pci.bus_id,driver_version,compute_cap,mig.mode.current,utilization.gpu,temperature.gpu,power.limit,serial --format=csv';

describe('NvidiaProvider', () => {
  it('8×H100 NVLink machine: eight hopper accelerators, NV18 between every pair, NIC links, affinity', async () => {
    const run = scriptedRunner({
      'nvidia-smi --query-gpu=': fixture('query-gpu-8xh100.csv'),
      'nvidia-smi topo -m': fixture('topo-m-8xh100-nv18-8nic.txt'),
      'nvidia-smi -q -d COMPUTE': versions('570.124.06', '12.8'),
    });

    const result = await new NvidiaProvider(run).detect();

    expect(result.accelerators).toHaveLength(8);
    expect(result.accelerators?.[5]).toEqual({
      id: 'nvidia-5',
      vendor: AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA,
      index: 5,
      uuid: 'GPU-a0000000-0000-4000-8000-000000000005',
      product: 'NVIDIA H100 80GB HBM3',
      family: 'hopper',
      memoryMib: 81559,
      computeCapability: '9.0',
      pciBusId: '0000:c3:00.0',
      numaNode: 1,
      cpuAffinity: '48-95,144-191',
      memoryUsedMib: 1,
      utilizationPercent: 0,
      temperatureCelsius: 29,
      powerLimitWatts: 700,
      migCapable: true,
      migEnabled: false,
      migDevices: [],
      serial: '1650000000005',
    });
    const nvlinks = result.links?.filter((link) => link.type === LinkType.LINK_TYPE_NVLINK) ?? [];
    expect(nvlinks).toHaveLength(28);
    expect(nvlinks.every((link) => link.nvlinks === 18)).toBe(true);
    expect(result.links).toHaveLength(28 + 64); // NIC–NIC cells belong to the rdma provider
    expect(result.driverVersion).toBe('570.124.06');
    expect(result.runtimeVersion).toBe('12.8');
    expect(run.calls).toEqual([QUERY, 'nvidia-smi topo -m', 'nvidia-smi -q -d COMPUTE']); // no MIG: no -L
  });

  it('MIG enabled A100 lists its partitions on the right GPU only', async () => {
    const run = scriptedRunner({
      'nvidia-smi --query-gpu=': fixture('query-gpu-4xa100-mig-on-gpu0.csv'),
      'nvidia-smi -L': fixture('gpu-list-4xa100-mig-on-gpu0.txt'),
      'nvidia-smi topo -m': [
        '\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID',
        'GPU0\t X \tNV12\tNV12\tNV12\t0-31\t0\t\tN/A',
        'GPU1\tNV12\t X \tNV12\tNV12\t0-31\t0\t\tN/A',
        'GPU2\tNV12\tNV12\t X \tNV12\t32-63\t1\t\tN/A',
        'GPU3\tNV12\tNV12\tNV12\t X \t32-63\t1\t\tN/A',
      ].join('\n'),
      'nvidia-smi -q -d COMPUTE': versions('535.216.01', '12.2'),
    });

    const [gpu0, gpu1] = (await new NvidiaProvider(run).detect()).accelerators ?? [];

    expect(gpu0).toMatchObject({ migCapable: true, migEnabled: true, family: 'ampere', computeCapability: '8.0' });
    expect(gpu0.migDevices.map((mig) => [mig.profile, mig.index, mig.memoryMib])).toEqual([
      ['1g.20gb', 0, 20480],
      ['1g.20gb', 1, 20480],
      ['1g.20gb', 2, 20480],
      ['1g.20gb', 3, 20480],
    ]);
    expect(gpu0.utilizationPercent).toBeUndefined();
    expect(gpu1).toMatchObject({ migCapable: true, migEnabled: false, migDevices: [] });
    expect(run.calls).toContain('nvidia-smi -L');
  });

  it('PCIe-only machine: no NVLink, GPUs linked through the host, NICs reached through PHB', async () => {
    const run = scriptedRunner({
      'nvidia-smi --query-gpu=': fixture('query-gpu-8xrtx4090.csv'),
      'nvidia-smi topo -m': fixture('topo-m-8xrtx4090-pcie.txt'),
      'nvidia-smi -q -d COMPUTE': versions('545.23.08', '12.3'),
    });

    const result = await new NvidiaProvider(run).detect();

    expect(result.accelerators?.every((gpu) => gpu.family === 'ada-lovelace' && !gpu.migCapable)).toBe(true);
    expect(result.links?.some((link) => link.type === LinkType.LINK_TYPE_NVLINK)).toBe(false);
    expect(result.links?.filter((link) => link.type === LinkType.LINK_TYPE_PHB)).toEqual([
      { a: 'nvidia-6', b: 'NIC0', type: LinkType.LINK_TYPE_PHB },
      { a: 'nvidia-6', b: 'NIC1', type: LinkType.LINK_TYPE_PHB },
    ]);
    expect(result.accelerators?.[0].serial).toBeUndefined();
  });

  it('an old driver that rejects compute_cap is asked again without it; the product table fills it in', async () => {
    const run = scriptedRunner({
      [QUERY]: exitError(2, fixture('invalid-field-compute-cap.txt')),
      'nvidia-smi --query-gpu=': fixture('query-gpu-4xv100-no-compute-cap.csv'),
      'nvidia-smi topo -m': fixture('topo-m-4xv100-nv3-mlx5-columns.txt'),
      'nvidia-smi -q -d COMPUTE': versions('418.67', '10.1'),
    });

    const result = await new NvidiaProvider(run).detect();

    expect(run.calls[1]).toBe(QUERY.replace('compute_cap,', ''));
    expect(result.accelerators?.map((gpu) => [gpu.family, gpu.computeCapability, gpu.migCapable])).toEqual([
      ['volta', '7.0', false],
      ['volta', '7.0', false],
      ['volta', '7.0', false],
      ['volta', '7.0', false],
    ]);
    expect(result.accelerators?.[2]).toMatchObject({ numaNode: 8, cpuAffinity: '64-127' });
    expect(result.links).toContainEqual({ a: 'nvidia-0', b: 'nvidia-1', type: LinkType.LINK_TYPE_NVLINK, nvlinks: 3 });
    expect(result.links).toContainEqual({ a: 'nvidia-0', b: 'mlx5_0', type: LinkType.LINK_TYPE_NODE });
  });

  it('no GPUs: "No devices were found" is an empty result, not a failure', async () => {
    const run = scriptedRunner({ 'nvidia-smi': exitError(6, fixture('no-devices-were-found.txt')) });

    await expect(new NvidiaProvider(run).detect()).resolves.toEqual({ accelerators: [] });
    expect(run.calls).toHaveLength(1);
  });

  it('a runner that resolves with "No devices were found" is read the same way', async () => {
    const run = scriptedRunner({ 'nvidia-smi': fixture('no-devices-were-found.txt') });

    await expect(new NvidiaProvider(run).detect()).resolves.toEqual({ accelerators: [] });
  });

  it('a failing command throws an error naming the provider and the command, so the last good inventory is kept', async () => {
    const run = scriptedRunner({
      'nvidia-smi --query-gpu=': fixture('query-gpu-8xh100.csv'),
      'nvidia-smi topo -m': exitError(255, 'Failed to initialize NVML: Driver/library version mismatch'),
    });

    await expect(new NvidiaProvider(run).detect()).rejects.toThrow(
      'nvidia: `nvidia-smi topo -m` failed: Command failed with exit code 255\nFailed to initialize NVML: Driver/library version mismatch',
    );
  });

  it('a failing GPU query throws without retrying', async () => {
    const run = scriptedRunner({
      'nvidia-smi --query-gpu=': exitError(9, 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'),
    });

    await expect(new NvidiaProvider(run).detect()).rejects.toThrow(/nvidia: `nvidia-smi --query-gpu=.*` failed: [^]*could not communicate/);
    expect(run.calls).toHaveLength(1);
  });

  it('unreadable output throws with the line number', async () => {
    const run = scriptedRunner({ 'nvidia-smi --query-gpu=': 'index, name\n0, Tesla T4\n<html>502 Bad Gateway</html>, x, y\n' });

    await expect(new NvidiaProvider(run).detect()).rejects.toThrow(/nvidia-smi --query-gpu: line 3/);
  });

  it('uses the nvidia-smi path it is given', async () => {
    const run = scriptedRunner({ '/usr/bin/nvidia-smi': exitError(6, 'No devices were found') });

    await new NvidiaProvider(run, { nvidiaSmi: '/usr/bin/nvidia-smi' }).detect();

    expect(run.calls[0].startsWith('/usr/bin/nvidia-smi --query-gpu=')).toBe(true);
  });

  describe('available()', () => {
    it('is true when nvidia-smi runs', async () => {
      await expect(new NvidiaProvider(scriptedRunner({ 'nvidia-smi -L': 'GPU 0: Tesla T4 (UUID: GPU-1)\n' })).available()).resolves.toBe(
        true,
      );
    });

    it('is true when nvidia-smi runs but finds no GPU: detect() reports that', async () => {
      const run = scriptedRunner({ 'nvidia-smi -L': exitError(6, 'No devices were found') });

      await expect(new NvidiaProvider(run).available()).resolves.toBe(true);
    });

    it('is false when nvidia-smi is not installed', async () => {
      await expect(new NvidiaProvider(scriptedRunner({ 'nvidia-smi': missingTool('nvidia-smi') })).available()).resolves.toBe(false);
    });
  });
});
