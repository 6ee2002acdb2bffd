import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ToolOutputError } from '../shared/tool-output';
import { parseNvidiaQueryGpu, rejectedQueryField } from './query-gpu';

const fixture = (name: string): string => readFileSync(join(__dirname, '__fixtures__', name), 'utf8');

describe('parseNvidiaQueryGpu', () => {
  it('8×H100: reads every column of every GPU, with units stripped and the bus id in sysfs form', () => {
    const gpus = parseNvidiaQueryGpu(fixture('query-gpu-8xh100.csv'));

    expect(gpus).toHaveLength(8);
    expect(gpus[0]).toEqual({
      index: 0,
      uuid: 'GPU-a0000000-0000-4000-8000-000000000000',
      name: 'NVIDIA H100 80GB HBM3',
      memoryTotalMib: 81559,
      memoryUsedMib: 1,
      pciBusId: '0000:1b:00.0',
      driverVersion: '570.124.06',
      computeCapability: '9.0',
      migMode: 'disabled',
      utilizationPercent: 0,
      temperatureCelsius: 31,
      powerLimitWatts: 700,
      serial: '1650000000000',
    });
    expect(gpus.map((gpu) => gpu.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('a field printing [N/A] is absent, not zero', () => {
    const [geforce] = parseNvidiaQueryGpu(fixture('query-gpu-geforce-and-quadro-na.csv'));

    expect(geforce.powerLimitWatts).toBeUndefined();
    expect(geforce.serial).toBeUndefined();
    expect(geforce.migMode).toBeUndefined();
    expect('powerLimitWatts' in geforce).toBe(false);
    expect(geforce.utilizationPercent).toBe(0); // a real 0 % reading stays 0
  });

  it('[Not Supported], [Unknown Error] and [Insufficient Permissions] are absent too', () => {
    const [, quadro] = parseNvidiaQueryGpu(fixture('query-gpu-geforce-and-quadro-na.csv'));

    expect(quadro).toEqual({
      index: 1,
      uuid: 'GPU-c0000000-0000-4000-8000-000000000001',
      name: 'Quadro K2200',
      memoryTotalMib: 4043,
      pciBusId: '0000:03:00.0',
      driverVersion: '470.57.02',
      computeCapability: '5.0',
      powerLimitWatts: 39.5,
    });
  });

  it('MIG-enabled A100: mig mode Enabled, and utilization nvidia-smi cannot read under MIG is absent', () => {
    const gpus = parseNvidiaQueryGpu(fixture('query-gpu-4xa100-mig-on-gpu0.csv'));

    expect(gpus.map((gpu) => gpu.migMode)).toEqual(['enabled', 'disabled', 'disabled', 'disabled']);
    expect(gpus[0].utilizationPercent).toBeUndefined();
    expect(gpus[1].utilizationPercent).toBe(0);
  });

  it('maps columns by header name, whatever their order, and reads csv,nounits values', () => {
    const csv = [
      'name, power.limit [W], index, memory.total [MiB], uuid',
      'Tesla T4, 70.00, 3, 15360, GPU-e0000000-0000-4000-8000-000000000000',
    ].join('\n');

    expect(parseNvidiaQueryGpu(csv)).toEqual([
      {
        index: 3,
        uuid: 'GPU-e0000000-0000-4000-8000-000000000000',
        name: 'Tesla T4',
        memoryTotalMib: 15360,
        powerLimitWatts: 70,
      },
    ]);
  });

  it('an old driver without compute_cap parses, the capability left to the product table', () => {
    const gpus = parseNvidiaQueryGpu(fixture('query-gpu-4xv100-no-compute-cap.csv'));

    expect(gpus).toHaveLength(4);
    expect(gpus[2].computeCapability).toBeUndefined();
    expect(gpus[2].pciBusId).toBe('0000:88:00.0');
  });

  it('"No devices were found" is an empty list, not an error', () => {
    expect(parseNvidiaQueryGpu(fixture('no-devices-were-found.txt'))).toEqual([]);
  });

  it('skips the driver warnings nvidia-smi writes to stdout', () => {
    const csv = [
      'WARNING: infoROM is corrupted at gpu 0000:04:00.0',
      'index, name',
      '0, Tesla T4',
    ].join('\n');

    expect(parseNvidiaQueryGpu(csv)).toEqual([{ index: 0, uuid: '', name: 'Tesla T4' }]);
  });

  it('garbage output throws with the line number', () => {
    const csv = ['index, name, memory.total [MiB]', '0, Tesla T4, 15360 MiB', 'Segmentation fault'].join('\n');

    expect(() => parseNvidiaQueryGpu(csv)).toThrow(ToolOutputError);
    expect(() => parseNvidiaQueryGpu(csv)).toThrow(/line 3: expected 3 comma-separated values/);
  });

  it('a headerless CSV is refused: columns cannot be found by name', () => {
    expect(() => parseNvidiaQueryGpu('0, Tesla T4, 15360')).toThrow(/line 1: header has no "index" column/);
  });

  it('a non-number where a reading belongs throws, naming the field', () => {
    const csv = ['index, name, temperature.gpu', '0, Tesla T4, hot'].join('\n');

    expect(() => parseNvidiaQueryGpu(csv)).toThrow(/line 2: temperature.gpu is "hot", not a number/);
  });

  it('empty output throws', () => {
    expect(() => parseNvidiaQueryGpu('')).toThrow(/output is empty/);
  });
});

describe('rejectedQueryField', () => {
  it('names the field an old driver refuses', () => {
    expect(rejectedQueryField(fixture('invalid-field-compute-cap.txt'))).toBe('compute_cap');
    expect(rejectedQueryField('some other failure')).toBeUndefined();
  });
});
