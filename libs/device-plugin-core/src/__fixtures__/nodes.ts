import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AcceleratorVendor, NodeInventory } from '@gpufleet/contracts';
import { parseNvidiaTopology } from '@gpufleet/device-inventory';
import { node } from '@gpufleet/testing';

/** An 8×V100 DGX-1 (hybrid cube-mesh NVLink) with the links `nvidia-smi topo -m` reports. */
export function dgx1(): NodeInventory {
  const topology = parseNvidiaTopology(readFileSync(join(__dirname, 'topo-m-8xv100-dgx1.txt'), 'utf8'));
  const inv = node('dgx1-0', { gpus: 8, product: 'Tesla V100-SXM2-32GB', memoryMib: 32_768, links: topology.links });
  inv.accelerators = inv.accelerators.map((a) => ({ ...a, uuid: `GPU-v100-${a.index}`, migCapable: false }));
  return inv;
}

/** Four A100s, GPU 0 with MIG on (two 1g.10gb and one 3g.40gb partitions). */
export function a100Mig(): NodeInventory {
  const inv = node('a100-mig-0', { gpus: 4, product: 'NVIDIA A100-SXM4-80GB' });
  inv.accelerators = inv.accelerators.map((a) => ({ ...a, uuid: `GPU-a100-${a.index}` }));
  inv.accelerators[0] = {
    ...inv.accelerators[0],
    migEnabled: true,
    migDevices: [
      { uuid: 'MIG-aaaa-1', profile: '1g.10gb', index: 0, gpuInstanceId: 9, computeInstanceId: 0, memoryMib: 9_856 },
      { uuid: 'MIG-aaaa-2', profile: '1g.10gb', index: 1, gpuInstanceId: 10, computeInstanceId: 0, memoryMib: 9_856 },
      { uuid: 'MIG-aaaa-3', profile: '3g.40gb', index: 2, gpuInstanceId: 2, computeInstanceId: 0, memoryMib: 40_192 },
      { uuid: 'MIG-aaaa-4', profile: '1g.10gb+me', index: 3, gpuInstanceId: 13, computeInstanceId: 0, memoryMib: 9_856 },
    ],
  };
  return inv;
}

export function amdNode(): NodeInventory {
  const inv = node('mi300x-0', { gpus: 2, links: [] });
  inv.accelerators = inv.accelerators.map((a) => ({
    ...a,
    id: `amd-${a.index}`,
    vendor: AcceleratorVendor.ACCELERATOR_VENDOR_AMD,
    uuid: `GPU-a1b2c3d4e5f6070${a.index}`,
    product: 'AMD Instinct MI300X',
    memoryMib: 196_608,
  }));
  return inv;
}

export function ascendNode(): NodeInventory {
  const inv = node('ascend-0', { gpus: 2, links: [] });
  inv.accelerators = inv.accelerators.map((a) => ({
    ...a,
    id: `ascend-${a.index}`,
    vendor: AcceleratorVendor.ACCELERATOR_VENDOR_ASCEND,
    uuid: '',
    product: 'Ascend910B3',
    memoryMib: 65_536,
  }));
  return inv;
}
