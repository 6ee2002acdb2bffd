import * as path from 'node:path';
import type { NodeInventory } from '@gpufleet/contracts';
import type { HostInfo } from '../host/host-info';
import { loadFleetFile } from '../simulated/fleet-file';
import type { Fleet } from '../simulated/fleet-types';
import { simulatedInventory } from '../simulated/simulated-inventory';
import type { DetectionResult } from '../provider';
import { InventoryAssembler } from './inventory-assembler';

const DEV_FLEET = path.resolve(__dirname, '../../../../examples/fleets/dev.yaml');

let fleet: Fleet;
let gpus: DetectionResult;
let nics: DetectionResult;
let host: HostInfo;

beforeAll(async () => {
  fleet = await loadFleetFile(DEV_FLEET);
  const h100 = simulatedInventory(fleet, 'h100-0');
  // Split the simulated node the way real providers split it: nvidia owns GPUs and links, rdma the NICs.
  gpus = { ...h100.detection, nics: [] };
  nics = { nics: h100.detection.nics };
  host = h100.host;
});

/** A clock the test moves by hand, one second per call unless set. */
function manualClock(start = Date.parse('2025-01-01T00:00:00Z')) {
  let now = start;
  return {
    clock: () => new Date(now),
    advance: (seconds: number) => {
      now += seconds * 1000;
    },
  };
}

function assembler(clock = manualClock().clock, extra: Partial<ConstructorParameters<typeof InventoryAssembler>[0]> = {}) {
  return new InventoryAssembler({ nodeName: 'h100-0', cluster: 'dev', agentVersion: '0.1.0', clock, ...extra });
}

function statusOf(inventory: NodeInventory, provider: string) {
  return inventory.providers.find((p) => p.provider === provider);
}

describe('InventoryAssembler', () => {
  it('merges GPUs, NICs, links and host facts from their providers, with computed labels', () => {
    const a = assembler(undefined, { topology: { zone: 'dev-a', rack: 'rack-1', nvlinkDomain: 'h100-0' } });
    a.record('nvidia', { ok: gpus });
    a.record('rdma', { ok: nics });
    a.record('host', { ok: {}, host });
    const { inventory, changed } = a.assemble();
    expect(changed).toBe(true);
    expect(inventory.generation).toBe(1);
    expect(inventory.accelerators).toHaveLength(8);
    expect(inventory.nics).toHaveLength(8);
    expect(inventory.links).toHaveLength(28 + 64);
    expect(inventory.cpu?.logicalCpus).toBe(224);
    expect(inventory).toMatchObject({ nodeName: 'h100-0', cluster: 'dev', os: 'linux/ubuntu-22.04', driverVersion: '550.54.15' });
    expect(inventory.labels).toMatchObject({
      'nvidia.com/gpu.count': '8',
      'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3',
      'feature.node.kubernetes.io/rdma.available': 'true',
      'gpufleet.io/nvlink-domain': 'h100-0',
      'kubernetes.io/arch': 'amd64',
    });
    expect(inventory.providers.map((p) => `${p.provider}:${p.ok}`)).toEqual(['host:true', 'nvidia:true', 'rdma:true']);
  });

  it('a failing nvidia pass keeps the last good GPUs and says why', () => {
    const time = manualClock();
    const a = assembler(time.clock);
    a.record('nvidia', { ok: gpus });
    const first = a.assemble().inventory;
    time.advance(30);
    a.record('nvidia', { error: new Error('nvidia-smi exited with 9: NVML driver/library version mismatch') });
    const { inventory, changed } = a.assemble();

    expect(inventory.accelerators.map((g) => g.uuid)).toEqual(first.accelerators.map((g) => g.uuid));
    expect(inventory.labels['nvidia.com/gpu.count']).toBe('8');
    expect(statusOf(inventory, 'nvidia')).toEqual({
      provider: 'nvidia',
      ok: false,
      error: 'nvidia-smi exited with 9: NVML driver/library version mismatch',
      lastSuccess: new Date('2025-01-01T00:00:00Z'),
      lastAttempt: new Date('2025-01-01T00:00:30Z'),
    });
    // The failure itself is news for the control plane.
    expect(changed).toBe(true);
    expect(inventory.generation).toBe(2);
  });

  it('a failing first pass reports the provider without devices', () => {
    const a = assembler();
    a.record('nvidia', { error: new Error('nvidia-smi: command not found') });
    const { inventory } = a.assemble();
    expect(inventory.accelerators).toEqual([]);
    expect(statusOf(inventory, 'nvidia')).toMatchObject({ ok: false, lastSuccess: undefined });
  });

  it('a pass that finds no GPUs removes them', () => {
    const a = assembler();
    a.record('nvidia', { ok: gpus });
    a.assemble();
    a.record('nvidia', { ok: { accelerators: [], links: [] } });
    const { inventory, changed } = a.assemble();
    expect(changed).toBe(true);
    expect(inventory.accelerators).toEqual([]);
    expect(inventory.links).toEqual([]);
    expect(inventory.labels['nvidia.com/gpu.present']).toBeUndefined();
    expect(statusOf(inventory, 'nvidia')?.ok).toBe(true);
  });

  it('a recovered provider clears its error', () => {
    const a = assembler();
    a.record('nvidia', { error: new Error('timeout') });
    a.assemble();
    a.record('nvidia', { ok: gpus });
    expect(statusOf(a.assemble().inventory, 'nvidia')).toMatchObject({ ok: true, error: '' });
  });

  it('unchanged content keeps the generation', () => {
    const time = manualClock();
    const a = assembler(time.clock);
    a.record('nvidia', { ok: gpus });
    a.record('host', { ok: {}, host });
    const first = a.assemble();
    time.advance(30);
    // Same devices, new readings: busy GPUs, warmer, memory in use, less free system memory.
    const busy: DetectionResult = {
      ...gpus,
      accelerators: gpus.accelerators!.map((g) => ({ ...g, utilizationPercent: 97, temperatureCelsius: 71, memoryUsedMib: 70000 })),
    };
    a.record('nvidia', { ok: busy });
    a.record('host', { ok: {}, host: { ...host, memory: { ...host.memory, availableMib: 1000 } } });
    const second = a.assemble();

    expect(second.changed).toBe(false);
    expect(second.inventory.generation).toBe(first.inventory.generation);
    expect(second.inventory.observedAt).toEqual(new Date('2025-01-01T00:00:30Z'));
    expect(second.inventory.accelerators[0].utilizationPercent).toBe(97);
  });

  it('a pass that finds exactly what the last one did moves only the timestamps, and a change after it still counts', () => {
    const time = manualClock();
    const a = assembler(time.clock);
    a.record('nvidia', { ok: structuredClone(gpus) });
    a.record('host', { ok: {}, host: structuredClone(host) });
    const first = a.assemble();
    time.advance(30);
    a.record('nvidia', { ok: structuredClone(gpus) });
    a.record('host', { ok: {}, host: structuredClone(host) });
    const second = a.assemble();
    expect(second.changed).toBe(false);
    const content = ({ observedAt: _o, providers: _p, ...rest }: NodeInventory) => rest;
    expect(content(second.inventory)).toEqual(content(first.inventory));
    expect(second.inventory.observedAt).toEqual(new Date('2025-01-01T00:00:30Z'));
    expect(second.inventory.providers.map((p) => p.lastAttempt)).toEqual([new Date('2025-01-01T00:00:30Z'), new Date('2025-01-01T00:00:30Z')]);

    a.record('nvidia', { ok: { ...gpus, accelerators: gpus.accelerators!.slice(1) } });
    const third = a.assemble();
    expect(third.changed).toBe(true);
    expect(third.inventory.accelerators).toHaveLength(7);
    expect(third.inventory.labels['nvidia.com/gpu.count']).toBe('7');
  });

  it('a NIC port going down is a change, and RDMA is no longer available when none is up', () => {
    const a = assembler();
    a.record('rdma', { ok: nics });
    a.assemble();
    a.record('rdma', { ok: { nics: nics.nics!.map((n) => ({ ...n, state: 'DOWN' })) } });
    const { inventory, changed } = a.assemble();
    expect(changed).toBe(true);
    expect(inventory.labels['feature.node.kubernetes.io/rdma.capable']).toBe('true');
    expect(inventory.labels['feature.node.kubernetes.io/rdma.available']).toBeUndefined();
  });

  it('lets configured node labels win over computed ones', () => {
    const a = assembler(undefined, { nodeLabels: { 'nvidia.com/gpu.product': 'H100-SXM', team: 'infra' } });
    a.record('nvidia', { ok: gpus });
    expect(a.assemble().inventory.labels).toMatchObject({ 'nvidia.com/gpu.product': 'H100-SXM', team: 'infra' });
    a.setNodeLabels({});
    const { inventory, changed } = a.assemble();
    expect(changed).toBe(true);
    expect(inventory.labels['nvidia.com/gpu.product']).toBe('NVIDIA-H100-80GB-HBM3');
  });

  it('continues from the generation it was given, e.g. after an agent restart', () => {
    const a = assembler(undefined, { generation: 41 });
    a.record('host', { ok: {}, host });
    expect(a.assemble().inventory.generation).toBe(42);
    expect(a.generation).toBe(42);
  });

  it('keeps the last host facts when the host pass fails', () => {
    const a = assembler();
    a.record('host', { ok: {}, host });
    a.assemble();
    a.record('host', { error: new Error('/host/proc/cpuinfo: permission denied') });
    const { inventory } = a.assemble();
    expect(inventory.cpu?.model).toBe('Intel(R) Xeon(R) Platinum 8480+');
    expect(statusOf(inventory, 'host')?.ok).toBe(false);
  });

  it('copies what providers hand it and hands out fresh lists, so neither can change what it remembers', () => {
    const a = assembler();
    a.record('nvidia', { ok: gpus });
    a.assemble().inventory.accelerators.pop();
    gpus.accelerators![0].product = 'tampered';
    const { inventory, changed } = a.assemble();
    expect(changed).toBe(false);
    expect(inventory.accelerators).toHaveLength(8);
    expect(inventory.accelerators[0].product).toBe('NVIDIA H100 80GB HBM3');
    gpus.accelerators![0].product = 'NVIDIA H100 80GB HBM3';
  });
});

describe('links to devices nobody reported', () => {
  it('are dropped until the NICs they name are reported, then kept', () => {
    const a = assembler();
    a.record('host', { ok: {}, host });
    a.record('nvidia', { ok: gpus });
    const gpuOnly = a.assemble().inventory;
    expect(gpuOnly.links.length).toBeGreaterThan(0);
    expect(gpuOnly.links.every((l) => l.a.startsWith('nvidia-') && l.b.startsWith('nvidia-'))).toBe(true);

    a.record('rdma', { ok: nics });
    const withNics = a.assemble().inventory;
    expect(withNics.links.some((l) => l.b.startsWith('mlx5_') || l.a.startsWith('mlx5_'))).toBe(true);
    expect(withNics.links.length).toBe(gpus.links!.length);
  });
});
