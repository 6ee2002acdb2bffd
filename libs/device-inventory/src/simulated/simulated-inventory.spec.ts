import * as path from 'node:path';
import { AcceleratorVendor, LinkType } from '@gpufleet/contracts';
import { loadFleetFile, parseFleet } from './fleet-file';
import type { Fleet } from './fleet-types';
import { fleetNodeList, listNames, numaCpuList, simulatedInventory } from './simulated-inventory';
import { SimulatedProvider } from './simulated-provider';

const DEV_FLEET = path.resolve(__dirname, '../../../../examples/fleets/dev.yaml');
let fleet: Fleet;
beforeAll(async () => {
  fleet = await loadFleetFile(DEV_FLEET);
});

describe('a simulated HGX H100 node', () => {
  it('reports 8 GPUs with vendor-style UUIDs and PCI ids, the first half on NUMA node 0', () => {
    const gpus = simulatedInventory(fleet, 'h100-0').detection.accelerators!;
    expect(gpus).toHaveLength(8);
    for (const gpu of gpus) {
      expect(gpu.uuid).toMatch(/^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(gpu.pciBusId).toMatch(/^00000000:[0-9A-F]{2}:00\.0$/);
    }
    expect(gpus.map((g) => g.numaNode)).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
    expect(gpus[0]).toMatchObject({
      id: 'nvidia-0',
      vendor: AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA,
      product: 'NVIDIA H100 80GB HBM3',
      family: 'hopper',
      memoryMib: 81559,
      computeCapability: '9.0',
      cpuAffinity: '0-55,112-167',
      powerLimitWatts: 700,
      migCapable: true,
      migEnabled: false,
    });
    expect(gpus[7].cpuAffinity).toBe('56-111,168-223');
    expect(new Set(gpus.map((g) => g.pciBusId)).size).toBe(8);
  });

  it('joins every GPU pair with NV18 and each GPU to its own NIC through one PCIe switch (PIX)', () => {
    const { links, nics } = simulatedInventory(fleet, 'h100-0').detection;
    const gpuPairs = links!.filter((l) => l.b.startsWith('nvidia-'));
    expect(gpuPairs).toHaveLength(28);
    expect(gpuPairs.every((l) => l.type === LinkType.LINK_TYPE_NVLINK && l.nvlinks === 18)).toBe(true);
    const pix = links!.filter((l) => l.type === LinkType.LINK_TYPE_PIX).map((l) => `${l.a}<->${l.b}`);
    expect(pix).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((i) => `nvidia-${i}<->mlx5_${i}`));
    const gpu0ToNic7 = links!.find((l) => l.a === 'nvidia-0' && l.b === 'mlx5_7');
    expect(gpu0ToNic7?.type).toBe(LinkType.LINK_TYPE_SYS);
    expect(nics!.every((n) => n.state === 'ACTIVE' && n.rateGbps === 400 && n.linkLayer === 'InfiniBand')).toBe(true);
    expect(nics![0].netdev).toMatch(/^ibp\d+s0$/);
  });

  it('gives a different node different UUIDs', () => {
    const a = simulatedInventory(fleet, 'h100-0').detection.accelerators!.map((g) => g.uuid);
    const b = simulatedInventory(fleet, 'h100-1').detection.accelerators!.map((g) => g.uuid);
    expect(new Set([...a, ...b]).size).toBe(16);
  });
});

describe('a simulated PCIe L40S node', () => {
  it('links GPUs NODE within a NUMA node and SYS across, with RoCE NICs', () => {
    const { links, accelerators, nics } = simulatedInventory(fleet, 'l40s-0').detection;
    const type = (a: string, b: string) => links!.find((l) => l.a === a && l.b === b)?.type;
    expect(accelerators!.map((g) => g.numaNode)).toEqual([0, 0, 1, 1]);
    expect(type('nvidia-0', 'nvidia-1')).toBe(LinkType.LINK_TYPE_NODE);
    expect(type('nvidia-1', 'nvidia-2')).toBe(LinkType.LINK_TYPE_SYS);
    expect(links!.some((l) => l.type === LinkType.LINK_TYPE_NVLINK)).toBe(false);
    expect(nics!.map((n) => n.linkLayer)).toEqual(['Ethernet', 'Ethernet']);
  });

  it('links GPUs sharing a PCIe switch as PIX when the file says so', () => {
    const small = parseFleet(
      'cluster: x\nnodes:\n  - name: n\n    accelerators: { product: NVIDIA L40S, count: 4, gpusPerPcieSwitch: 2 }\n',
    );
    const links = simulatedInventory(small, 'n').detection.links!;
    expect(links.find((l) => l.a === 'nvidia-0' && l.b === 'nvidia-1')?.type).toBe(LinkType.LINK_TYPE_PIX);
    expect(links.find((l) => l.a === 'nvidia-1' && l.b === 'nvidia-2')?.type).toBe(LinkType.LINK_TYPE_SYS);
  });
});

describe('a simulated MIG node', () => {
  it('reports MIG devices with profiles, placements and memory per GPU', () => {
    const gpus = simulatedInventory(fleet, 'a100-mig-0').detection.accelerators!;
    expect(gpus.every((g) => g.migEnabled && g.migCapable)).toBe(true);
    expect(gpus[0].migDevices.map((m) => `${m.profile}@${m.placementStart}:${m.placementSize}`)).toEqual([
      '1g.10gb@0:1',
      '1g.10gb@1:1',
      '1g.10gb@2:1',
      '1g.10gb@3:1',
      '1g.10gb@4:1',
      '1g.10gb@5:1',
      '1g.10gb@6:1',
    ]);
    expect(gpus[1].migDevices).toEqual([
      expect.objectContaining({ profile: '7g.80gb', index: 0, memoryMib: 81920, placementStart: 0, placementSize: 8 }),
    ]);
    // The shared layout only fits with the 3g.40gb on the upper half.
    expect(gpus[5].migDevices.map((m) => `${m.profile}@${m.placementStart}`)).toEqual([
      '2g.20gb@0',
      '1g.10gb@2',
      '1g.10gb@3',
      '3g.40gb@4',
    ]);
    const uuids = gpus.flatMap((g) => g.migDevices.map((m) => m.uuid));
    expect(uuids).toHaveLength(7 + 1 + 2 + 2 + 4 * 4);
    expect(new Set(uuids).size).toBe(uuids.length);
    expect(uuids.every((u) => /^MIG-[0-9a-f-]{36}$/.test(u))).toBe(true);
    expect(gpus[0].migDevices[0]).toMatchObject({ gpuInstanceId: 1, computeInstanceId: 0, memoryMib: 10240 });
  });
});

describe('a simulated CPU-only node', () => {
  it('has no accelerators, NICs or links, and the host facts of the fleet file', () => {
    const { detection, host } = simulatedInventory(fleet, 'cpu-0');
    expect(detection).toEqual({ accelerators: [], nics: [], links: [] });
    expect(host).toEqual({
      cpu: {
        vendor: 'AuthenticAMD',
        model: 'AMD EPYC 9654 96-Core Processor',
        architecture: 'x86_64',
        sockets: 2,
        cores: 192,
        logicalCpus: 384,
        numaNodes: 2,
      },
      memory: { totalMib: 1536 * 1024, availableMib: Math.floor(1536 * 1024 * 0.97) },
      os: 'linux/ubuntu-22.04',
      kernel: '5.15.0-105-generic',
      localStorageGib: 3576,
    });
  });
});

describe('determinism', () => {
  it('produces identical inventories from two loads of the same file', async () => {
    const again = await loadFleetFile(DEV_FLEET);
    for (const node of fleet.nodes) {
      expect(simulatedInventory(again, node.name)).toEqual(simulatedInventory(fleet, node.name));
    }
  });

  it('changes UUIDs when the cluster name changes', () => {
    const text = 'nodes:\n  - name: n\n    accelerators: { product: NVIDIA L4, count: 1 }\n';
    const a = simulatedInventory(parseFleet(`cluster: a\n${text}`), 'n').detection.accelerators![0].uuid;
    const b = simulatedInventory(parseFleet(`cluster: b\n${text}`), 'n').detection.accelerators![0].uuid;
    expect(a).not.toBe(b);
  });

  it('lays out CPU affinity by NUMA node and SMT sibling range', () => {
    expect(numaCpuList(1, 192, 384, 2)).toBe('96-191,288-383');
    expect(numaCpuList(0, 72, 72, 1)).toBe('0-71');
  });
});

describe('SimulatedProvider', () => {
  it('detects the node of the fleet file and reads its host facts', async () => {
    const provider = new SimulatedProvider(fleet, 'h100-1');
    expect(provider.name).toBe('simulated');
    expect(await provider.available()).toBe(true);
    expect(await provider.detect()).toEqual(simulatedInventory(fleet, 'h100-1').detection);
    expect((await provider.readHostInfo()).cpu.logicalCpus).toBe(224);
    expect(provider.topology).toEqual({ zone: 'dev-a', rack: 'rack-1', nvlinkDomain: 'h100-1' });
    expect(provider.nodeLabels).toEqual({ 'gpufleet.io/node-class': 'training' });
  });

  it('fails passes on demand, as a crashed vendor tool would', async () => {
    const provider = new SimulatedProvider(fleet, 'h100-0');
    provider.simulateFailure('nvidia-smi: NVML driver/library version mismatch');
    await expect(provider.detect()).rejects.toThrow('NVML driver/library version mismatch');
    provider.simulateFailure();
    expect((await provider.detect()).accelerators).toHaveLength(8);
  });

  it('refuses a node the fleet does not have, listing the ones it does', () => {
    expect(() => new SimulatedProvider(fleet, 'h100-9')).toThrow(
      'UNKNOWN_NODE: the fleet of cluster "dev" has no node "h100-9"; its nodes are h100-0, h100-1, l40s-0, a100-mig-0, cpu-0',
    );
  });

  it('names a large fleet by its entries, not node by node', () => {
    const large = parseFleet('cluster: big\nnodes:\n  - namePrefix: gpu-\n    count: 1000\n  - name: head-0\n  - name: cpu-{0..1}\n');
    expect(() => new SimulatedProvider(large, 'gpu-1000')).toThrow(
      'UNKNOWN_NODE: the fleet of cluster "big" has no node "gpu-1000"; its nodes are gpu-0 … gpu-999, head-0, cpu-0, cpu-1',
    );
    const many = parseFleet(`cluster: many\nnodes:\n${Array.from({ length: 12 }, (_, i) => `  - name: n-${i}\n`).join('')}`);
    expect(fleetNodeList(many)).toBe('n-0, n-1, n-2, n-3, n-4, n-5, n-6, n-7, … (12 nodes in all)');
    expect(listNames(['"a"', '"b"'])).toBe('"a", "b"');
    expect(listNames(Array.from({ length: 10 }, (_, i) => `x${i}`), 3)).toBe('x0, x1, x2, … (10 in all)');
  });
});
