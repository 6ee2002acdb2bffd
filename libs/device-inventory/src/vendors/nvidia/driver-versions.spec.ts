import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseNvidiaDriverVersions } from './driver-versions';

const fixture = (name: string): string => readFileSync(join(__dirname, '__fixtures__', name), 'utf8');

describe('parseNvidiaDriverVersions', () => {
  it('reads driver and CUDA versions from `nvidia-smi -q -d COMPUTE`', () => {
    expect(parseNvidiaDriverVersions(fixture('nvidia-smi-q-d-compute.txt'))).toEqual({
      driverVersion: '525.105.17',
      cudaVersion: '12.0',
    });
  });

  it('also reads the banner of plain `nvidia-smi`', () => {
    expect(parseNvidiaDriverVersions(fixture('nvidia-smi-header-535.txt'))).toEqual({
      driverVersion: '535.216.01',
      cudaVersion: '12.2',
    });
  });

  it('a driver that prints no CUDA version leaves the runtime absent', () => {
    expect(parseNvidiaDriverVersions('Driver Version                      : 384.111\n')).toEqual({
      driverVersion: '384.111',
    });
  });

  it('output without a driver version throws', () => {
    expect(() => parseNvidiaDriverVersions('Failed to initialize NVML: Driver/library version mismatch')).toThrow(
      /nvidia-smi -q -d COMPUTE: no "Driver Version" line/,
    );
  });
});
