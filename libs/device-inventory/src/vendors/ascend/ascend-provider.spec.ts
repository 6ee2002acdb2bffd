import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AcceleratorVendor } from '@gpufleet/contracts';
import { exitError, missingTool, scriptedRunner } from '../shared/scripted-runner';
import { AscendProvider, ascendProductName, ascendSocVersion } from './ascend-provider';

const fixture = (name: string): string => readFileSync(join(__dirname, '__fixtures__', name), 'utf8');

describe('AscendProvider', () => {
  it('8×910B3 machine: eight ascend910 accelerators with 64 GiB HBM and the driver version', async () => {
    const run = scriptedRunner({ 'npu-smi info': fixture('npu-smi-info-8x910b3.txt') });

    const result = await new AscendProvider(run).detect();

    expect(result.accelerators).toHaveLength(8);
    expect(result.accelerators?.[4]).toEqual({
      id: 'ascend-4',
      vendor: AcceleratorVendor.ACCELERATOR_VENDOR_ASCEND,
      index: 4,
      uuid: '',
      product: 'Ascend 910B3',
      family: 'ascend910',
      memoryMib: 65536,
      computeCapability: 'Ascend910B3',
      pciBusId: '0000:81:00.0',
      memoryUsedMib: 3381,
      utilizationPercent: 0,
      temperatureCelsius: 52,
      migCapable: false,
      migEnabled: false,
      migDevices: [],
    });
    expect(result.driverVersion).toBe('24.1.0.3');
    expect(result.links).toBeUndefined();
  });

  it('310P3 inference cards are ascend310', async () => {
    const run = scriptedRunner({ 'npu-smi info': fixture('npu-smi-info-2x310p3.txt') });

    const result = await new AscendProvider(run).detect();

    expect(result.accelerators?.map((npu) => [npu.id, npu.product, npu.family, npu.computeCapability])).toEqual([
      ['ascend-0', 'Ascend 310P3', 'ascend310', 'Ascend310P3'],
      ['ascend-1', 'Ascend 310P3', 'ascend310', 'Ascend310P3'],
    ]);
  });

  it('a failing npu-smi throws an error naming the command', async () => {
    const run = scriptedRunner({ 'npu-smi info': exitError(-1, 'dcmi module initialize failed. ret is -8005') });

    await expect(new AscendProvider(run).detect()).rejects.toThrow(/^ascend: `npu-smi info` failed: [^]*-8005/);
  });

  it('unreadable output throws with the line number', async () => {
    const run = scriptedRunner({ 'npu-smi info': '| NPU   Name | Health | Power(W) |\n| 0  910B3 | OK |\n' });

    await expect(new AscendProvider(run).detect()).rejects.toThrow(/npu-smi info: line 2/);
  });

  it('available() is false without npu-smi and true when it runs', async () => {
    await expect(new AscendProvider(scriptedRunner({ 'npu-smi': missingTool('npu-smi') })).available()).resolves.toBe(false);
    await expect(new AscendProvider(scriptedRunner({ 'npu-smi info': fixture('npu-smi-info-2x310p3.txt') })).available()).resolves.toBe(true);
  });
});

describe('Ascend product names', () => {
  it.each([
    ['910B3', 'Ascend 910B3', 'Ascend910B3'],
    ['Ascend910', 'Ascend 910', undefined],
    ['310P3', 'Ascend 310P3', 'Ascend310P3'],
  ])('%s is %s, SoC %s', (name, product, soc) => {
    expect(ascendProductName(name)).toBe(product);
    expect(ascendSocVersion(name)).toBe(soc);
  });
});
