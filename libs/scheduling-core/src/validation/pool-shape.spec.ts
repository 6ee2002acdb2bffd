import { Accelerator, AcceleratorVendor, NodeInventory, NodePhase } from '@gpufleet/contracts';
import { CapacityModel } from '@gpufleet/capacity-core';
import { H100 } from '../admission/__fixtures__/workloads';
import { poolShapeFromCapacity } from './pool-shape';

function gpu(index: number, migEnabled = false): Accelerator {
  return {
    id: `nvidia-${index}`,
    vendor: AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA,
    index,
    uuid: `GPU-${index}`,
    product: H100,
    family: 'hopper',
    memoryMib: 81_559,
    migCapable: true,
    migEnabled,
    migDevices: [],
  };
}

function node(name: string, gpus: number, logicalCpus: number, migEnabled: number[] = []): NodeInventory {
  return {
    nodeName: name,
    cluster: 'dev',
    os: 'linux/ubuntu-22.04',
    kernel: '5.15.0',
    cpu: { vendor: 'GenuineIntel', model: 'Intel(R) Xeon(R) Platinum 8480+', architecture: 'x86_64', sockets: 2, cores: 112, logicalCpus, numaNodes: 2 },
    memory: { totalMib: 2_000_000 },
    localStorageGib: 30_000,
    accelerators: Array.from({ length: gpus }, (_, i) => gpu(i, migEnabled.includes(i))),
    nics: [],
    links: [],
    topology: undefined,
    labels: {},
    providers: [],
    generation: 1,
    observedAt: undefined,
    agentVersion: 'test',
  };
}

describe('poolShapeFromCapacity', () => {
  it('counts every node of the pool, Ready or not, splitting MIG-enabled accelerators off', () => {
    const model = new CapacityModel();
    model.batch(() => {
      model.upsertNode(node('a', 8, 224));
      model.upsertNode(node('b', 8, 224, [6, 7]));
      model.setPhase('a', NodePhase.NODE_PHASE_READY);
    });
    const pool = model.listPools()[0].name;
    const shape = poolShapeFromCapacity(model, pool);
    expect(shape).toMatchObject({
      name: pool,
      acceleratorProduct: H100,
      acceleratorMemoryMib: 81_559,
      totalAccelerators: 14,
      totalMigAccelerators: 2,
      largestNode: { accelerators: 8, migAccelerators: 2, vcpu: 224, memoryMib: 2_000_000 },
    });
    expect(shape?.nodeShapes).toHaveLength(2);
    expect(shape?.migGeometry?.profiles.map((p) => p.name)).toContain('3g.40gb');
  });

  it('is undefined for a pool the model does not know', () => {
    expect(poolShapeFromCapacity(new CapacityModel(), 'nowhere')).toBeUndefined();
  });
});
