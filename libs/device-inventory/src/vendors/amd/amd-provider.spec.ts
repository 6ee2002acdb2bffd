import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AcceleratorVendor, LinkType } from '@gpufleet/contracts';
import { exitError, missingTool, scriptedRunner } from '../shared/scripted-runner';
import { AmdProvider } from './amd-provider';

const fixture = (name: string): string => readFileSync(join(__dirname, '__fixtures__', name), 'utf8');

const ROCM_SMI_INVENTORY =
  'rocm-smi --showproductname --showmeminfo vram --showbus --showuniqueid --showserial --showdriverversion --json';

describe('AmdProvider', () => {
  it('8×MI300X from amd-smi: cdna3 accelerators with gfx942, UUIDs from `amd-smi list`, XGMI links from rocm-smi', async () => {
    const topology = {
      system: Object.fromEntries(
        [0, 1, 2, 3, 4, 5, 6, 7].flatMap((i) =>
          [0, 1, 2, 3, 4, 5, 6, 7].filter((j) => j > i).map((j) => [`(Topology) Link type between DRM devices ${i} and ${j}`, 'XGMI']),
        ),
      ),
    };
    const run = scriptedRunner({
      'amd-smi static --json': fixture('amd-smi-static-8xmi300x.json'),
      'amd-smi list --json': fixture('amd-smi-list-8xmi300x.json'),
      'rocm-smi --showtopotype --json': JSON.stringify(topology),
    });

    const result = await new AmdProvider(run).detect();

    expect(result.accelerators).toHaveLength(8);
    expect(result.accelerators?.[3]).toEqual({
      id: 'amd-3',
      vendor: AcceleratorVendor.ACCELERATOR_VENDOR_AMD,
      index: 3,
      uuid: '3aff74a1-0000-1000-80e8-4c7b5b000003',
      product: 'AMD Instinct MI300X',
      family: 'cdna3',
      memoryMib: 196592,
      computeCapability: 'gfx942',
      pciBusId: '0000:65:00.0',
      numaNode: 0,
      powerLimitWatts: 750,
      migCapable: false,
      migEnabled: false,
      migDevices: [],
      serial: '0x5F00000000000003',
    });
    expect(result.links).toHaveLength(28);
    expect(result.links?.every((link) => link.type === LinkType.LINK_TYPE_XGMI)).toBe(true);
    expect(result.driverVersion).toBe('6.8.5');
  });

  it('falls back to rocm-smi when amd-smi is not installed', async () => {
    const run = scriptedRunner({
      'amd-smi': missingTool('amd-smi'),
      [ROCM_SMI_INVENTORY]: fixture('rocm-smi-4xmi250x.json'),
      'rocm-smi --showtopotype --json': fixture('rocm-smi-showtopotype-4xmi250x.json'),
    });

    const result = await new AmdProvider(run).detect();

    expect(result.accelerators?.map((gpu) => [gpu.id, gpu.family, gpu.computeCapability, gpu.memoryMib])).toEqual([
      ['amd-0', 'cdna2', 'gfx90a', 65520],
      ['amd-1', 'cdna2', 'gfx90a', 65520],
      ['amd-2', 'cdna2', 'gfx90a', 65520],
      ['amd-3', 'cdna2', 'gfx90a', 65520],
    ]);
    expect(result.links).toHaveLength(6);
    expect(result.driverVersion).toBe('6.3.6');
  });

  it('falls back to rocm-smi when amd-smi runs but fails', async () => {
    const run = scriptedRunner({
      'amd-smi static': exitError(1, 'AMDSMI_STATUS_INIT_ERROR'),
      [ROCM_SMI_INVENTORY]: fixture('rocm-smi-rx7900xt.json'),
      'rocm-smi --showtopotype --json': '{"system": {}}',
    });

    const result = await new AmdProvider(run).detect();

    expect(result.accelerators?.map((gpu) => [gpu.product, gpu.family])).toEqual([['Radeon RX 7900 XT', 'rdna3']]);
    expect(result.links).toEqual([]);
  });

  it('a node with amd-smi alone reports GPUs and no links', async () => {
    const run = scriptedRunner({
      'amd-smi static --json': fixture('amd-smi-static-mi210.json'),
      'amd-smi list --json': '[{"gpu": 0, "bdf": "0000:c3:00.0", "uuid": "39ff740f-0000-1000-8000-0000000000a1"}]',
      'rocm-smi': missingTool('rocm-smi'),
    });

    const result = await new AmdProvider(run).detect();

    expect(result.accelerators?.[0]).toMatchObject({ pciBusId: '0000:c3:00.0', cpuAffinity: '1-63,65-111', family: 'cdna2' });
    expect(result.links).toBeUndefined();
    expect(result.driverVersion).toBeUndefined(); // the kernel banner amd-smi printed is no version
  });

  it('when both tools fail, the error names both', async () => {
    const run = scriptedRunner({
      'amd-smi': exitError(1, 'AMDSMI_STATUS_DRM_ERROR'),
      'rocm-smi': exitError(2, 'ERROR:root:Driver not initialized (amdgpu not found in modules)'),
    });

    await expect(new AmdProvider(run).detect()).rejects.toThrow(
      /amd: `amd-smi static --json` failed: [^]*AMDSMI_STATUS_DRM_ERROR; the rocm-smi fallback failed too: amd: `rocm-smi .*` failed: [^]*amdgpu not found/,
    );
  });

  it('when amd-smi fails and rocm-smi is not installed, the amd-smi failure is reported', async () => {
    const run = scriptedRunner({ 'amd-smi': exitError(1, 'AMDSMI_STATUS_DRM_ERROR'), 'rocm-smi': missingTool('rocm-smi') });

    await expect(new AmdProvider(run).detect()).rejects.toThrow(/^amd: `amd-smi static --json` failed: [^]*DRM_ERROR$/);
  });

  it('unreadable amd-smi output with no rocm-smi to fall back on throws with the line number', async () => {
    const run = scriptedRunner({ 'amd-smi static': '{"gpu_data": [\n{"gpu": 0,,}\n]}', 'rocm-smi': missingTool('rocm-smi') });

    await expect(new AmdProvider(run).detect()).rejects.toThrow(/amd-smi static --json: line 2: not valid JSON/);
  });

  it('no GPUs is an empty result, and no topology is asked for', async () => {
    const run = scriptedRunner({ 'amd-smi static --json': '{"gpu_data": []}' });

    await expect(new AmdProvider(run).detect()).resolves.toEqual({ accelerators: [] });
    expect(run.calls).toEqual(['amd-smi static --json']);
  });

  describe('available()', () => {
    it('is true when amd-smi runs', async () => {
      await expect(new AmdProvider(scriptedRunner({ 'amd-smi version': 'AMDSMI Tool: 25.3.0' })).available()).resolves.toBe(true);
    });

    it('is true when only rocm-smi is installed', async () => {
      const run = scriptedRunner({ 'amd-smi': missingTool('amd-smi'), 'rocm-smi --version': 'ROCM-SMI version: 3.0.0' });

      await expect(new AmdProvider(run).available()).resolves.toBe(true);
    });

    it('is false when neither is installed', async () => {
      const run = scriptedRunner({ 'amd-smi': missingTool('amd-smi'), 'rocm-smi': missingTool('rocm-smi') });

      await expect(new AmdProvider(run).available()).resolves.toBe(false);
    });
  });
});
