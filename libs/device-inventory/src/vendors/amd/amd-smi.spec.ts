import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ToolOutputError } from '../shared/tool-output';
import { parseAmdSmiList, parseAmdSmiStatic } from './amd-smi';

const fixture = (name: string): string => readFileSync(join(__dirname, '__fixtures__', name), 'utf8');

describe('parseAmdSmiStatic', () => {
  it('8×MI300X (list form of ROCm 6.x): product, gfx942, 196592 MiB of HBM, bus, NUMA node, power cap', () => {
    const gpus = parseAmdSmiStatic(fixture('amd-smi-static-8xmi300x.json'));

    expect(gpus).toHaveLength(8);
    expect(gpus[5]).toEqual({
      index: 5,
      product: 'AMD Instinct MI300X',
      pciBusId: '0000:a6:00.0',
      gfxTarget: 'gfx942',
      memoryMib: 196592,
      numaNode: 1,
      powerLimitWatts: 750,
      serial: '0x5F00000000000005',
      driverVersion: '6.8.5',
    });
  });

  it('MI210 ({"gpu_data": [...]} form of amd-smi 25+): reads CPU affinity per socket and the gfx90a target', () => {
    const [mi210] = parseAmdSmiStatic(fixture('amd-smi-static-mi210.json'));

    expect(mi210).toEqual({
      index: 0,
      product: 'AMD Instinct MI210',
      gfxTarget: 'gfx90a',
      memoryMib: 65520,
      numaNode: 1,
      cpuAffinity: '1-63,65-111',
      powerLimitWatts: 300,
    });
  });

  it("an in-tree amdgpu driver's kernel banner is not reported as the driver version, nor serial 0 as a serial", () => {
    const [mi210] = parseAmdSmiStatic(fixture('amd-smi-static-mi210.json'));

    expect(mi210.driverVersion).toBeUndefined();
    expect(mi210.serial).toBeUndefined();
  });

  it('skips the warnings amd-smi prints before its JSON', () => {
    const text = `WARNING: User is missing the following required groups: render, video.\n${fixture('amd-smi-static-mi210.json')}`;

    expect(parseAmdSmiStatic(text)).toHaveLength(1);
  });

  it('N/A values are absent, not zero', () => {
    const text = JSON.stringify([
      { gpu: 0, asic: { market_name: 'AMD Instinct MI300X', target_graphics_version: 'N/A' }, vram: { size: 'N/A' }, limit: { socket_power: 'N/A' } },
    ]);

    expect(parseAmdSmiStatic(text)).toEqual([{ index: 0, product: 'AMD Instinct MI300X' }]);
  });

  it('no GPUs is an empty list', () => {
    expect(parseAmdSmiStatic('{"gpu_data": []}')).toEqual([]);
  });

  it('garbage output throws with the line number', () => {
    const text = 'AMD SMI version 24.6\n{"gpu_data": [ {"gpu": 0,\n oops } ]}';

    expect(() => parseAmdSmiStatic(text)).toThrow(ToolOutputError);
    expect(() => parseAmdSmiStatic(text)).toThrow(/amd-smi static --json: line 3: not valid JSON/);
  });

  it('output that is not JSON at all throws', () => {
    expect(() => parseAmdSmiStatic('ERROR: amdgpu driver not loaded')).toThrow(/no JSON document/);
  });

  it('a GPU without a name throws', () => {
    expect(() => parseAmdSmiStatic('[{"gpu": 0, "asic": {}}]')).toThrow(/GPU 0 has no asic.market_name/);
  });
});

describe('parseAmdSmiList', () => {
  it('gives each GPU its UUID and bus address', () => {
    const listed = parseAmdSmiList(fixture('amd-smi-list-8xmi300x.json'));

    expect(listed).toHaveLength(8);
    expect(listed[1]).toEqual({ index: 1, uuid: '1aff74a1-0000-1000-80e8-4c7b5b000001', pciBusId: '0000:26:00.0' });
  });
});
