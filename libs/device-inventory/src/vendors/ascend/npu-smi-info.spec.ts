import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ToolOutputError } from '../shared/tool-output';
import { parseNpuSmiInfo } from './npu-smi-info';

const fixture = (name: string): string => readFileSync(join(__dirname, '__fixtures__', name), 'utf8');

describe('parseNpuSmiInfo', () => {
  it('8×910B3: one chip per NPU, 64 GiB of HBM each, bus ids in sysfs form, process table ignored', () => {
    const info = parseNpuSmiInfo(fixture('npu-smi-info-8x910b3.txt'));

    expect(info.version).toBe('24.1.0.3');
    expect(info.chips).toHaveLength(8);
    expect(info.chips[0]).toEqual({
      index: 0,
      npuId: 0,
      chipId: 0,
      name: '910B3',
      health: 'OK',
      powerWatts: 94.7,
      temperatureCelsius: 54,
      utilizationPercent: 0,
      memoryMib: 65536,
      memoryUsedMib: 3396,
      pciBusId: '0000:c1:00.0',
    });
    expect(info.chips.map((chip) => chip.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('Ascend910 with two chips per NPU: devices are numbered by Phy-ID, the shared power reading "-" is absent', () => {
    const { chips } = parseNpuSmiInfo(fixture('npu-smi-info-ascend910-2chip.txt'));

    expect(chips.map((chip) => [chip.npuId, chip.chipId, chip.index, chip.pciBusId])).toEqual([
      [0, 0, 0, '0000:9d:00.0'],
      [0, 1, 1, '0000:9f:00.0'],
    ]);
    expect(chips[0].powerWatts).toBe(178.5);
    expect(chips[1].powerWatts).toBeUndefined();
    expect(chips[1].memoryUsedMib).toBe(3195);
  });

  it('310P3 has no HBM column: memory is its DDR, device ids from the Device column', () => {
    const { chips, version } = parseNpuSmiInfo(fixture('npu-smi-info-2x310p3.txt'));

    expect(version).toBeUndefined();
    expect(chips).toEqual([
      expect.objectContaining({ index: 0, name: '310P3', memoryMib: 21534, memoryUsedMib: 1074, pciBusId: '0000:82:00.0' }),
      expect.objectContaining({ index: 1, name: '310P3', memoryMib: 21534, memoryUsedMib: 1070, pciBusId: '0000:89:00.0' }),
    ]);
  });

  it('garbage output throws with the line number', () => {
    const text = [
      '| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|',
      '| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |',
      '| 0     910B3               | OK            | 94.7        54                0    / 0             |',
      '| dcmi model initialized failed, because the device is used. ret is -8020 |',
    ].join('\n');

    expect(() => parseNpuSmiInfo(text)).toThrow(ToolOutputError);
    expect(() => parseNpuSmiInfo(text)).toThrow(/npu-smi info: line 4: expected 3 "\|" cells/);
  });

  it('an NPU row without its chip row throws', () => {
    const text = [
      '| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|',
      '| 0     910B3               | OK            | 94.7        54                0    / 0             |',
    ].join('\n');

    expect(() => parseNpuSmiInfo(text)).toThrow(/line 2: NPU 0 has no chip row/);
  });

  it('output without the device table throws', () => {
    expect(() => parseNpuSmiInfo('DrvMngGetConsoleLogLevel failed. (g_conlogLevel=3)\n')).toThrow(/no "\| NPU   Name \| Health \|" table header/);
  });
});
