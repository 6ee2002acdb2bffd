import { InstanceType, NodePhase, WatchEventType } from '@gpufleet/contracts';
import { A100_80GB, cpuNodeInventory, L40S, migDevice, nodeInventory, NodeOptions } from './__fixtures__/inventories';
import { CapacityModel, InstanceTypeEvent } from './capacity-model';
import { CREDITS_PER_ACCELERATOR, CREDITS_PER_VCPU } from './instance-types';

const READY = NodePhase.NODE_PHASE_READY;
const NOT_READY = NodePhase.NODE_PHASE_NOT_READY;
const H100_POOL = 'h100-80gb-hbm3-x86-64';
const A100_POOL = 'a100-sxm4-80gb-x86-64';

function readyNode(model: CapacityModel, name: string, options: NodeOptions = {}): InstanceTypeEvent[] {
  return [...model.upsertNode(nodeInventory(name, options)), ...model.setPhase(name, READY)];
}

function type(model: CapacityModel, name: string): InstanceType {
  const t = model.getInstanceType(name);
  if (!t) throw new Error(`no InstanceType ${name}; have ${model.listInstanceTypes().map((x) => x.name).join(', ')}`);
  return t;
}

function partition(t: InstanceType, profile: string) {
  const p = t.capacity?.partitioned.find((x) => x.profile === profile);
  if (!p) throw new Error(`no profile ${profile} on ${t.name}`);
  return p.view;
}

describe('CapacityModel', () => {
  describe('whole accelerators', () => {
    it('two 8×H100 nodes offer 16 whole accelerators as 1x and 2 units of 8x', () => {
      const model = new CapacityModel();
      readyNode(model, 'gpu-1');
      readyNode(model, 'gpu-2');

      expect(model.listInstanceTypes().map((t) => t.name)).toEqual(
        ['1x', '2x', '4x', '8x'].map((s) => `${H100_POOL}.${s}`),
      );
      expect(type(model, `${H100_POOL}.1x`).capacity?.whole).toEqual({ onceMaxRequest: 8, remaining: 16, capacity: 16 });
      const eight = type(model, `${H100_POOL}.8x`);
      expect(eight.capacity?.whole).toEqual({ onceMaxRequest: 8, remaining: 16, capacity: 16 });
      expect(eight.creditPrice).toBe(8 * CREDITS_PER_ACCELERATOR);
      expect(eight.unit).toEqual({ accelerators: 8, vcpu: 224, memoryMib: 2_000_000, localStorageGib: 30_000, acceleratorMemoryMib: 81_559 });
      expect(type(model, `${H100_POOL}.1x`).unit).toEqual({ accelerators: 1, vcpu: 28, memoryMib: 250_000, localStorageGib: 3_750, acceleratorMemoryMib: 81_559 });
      expect(eight.readyNodes).toBe(2);
    });

    it('a whole allocation counts in units of the InstanceType: 3 taken of 8 leaves one 4x unit per node', () => {
      const model = new CapacityModel();
      readyNode(model, 'gpu-1');
      readyNode(model, 'gpu-2');
      model.setAllocations('gpu-1', { accelerators: { 'nvidia-0': { mode: 'whole' }, 'nvidia-1': { mode: 'whole' }, 'nvidia-2': { mode: 'whole' } } });

      expect(type(model, `${H100_POOL}.1x`).capacity?.whole).toEqual({ onceMaxRequest: 8, remaining: 13, capacity: 16 });
      expect(type(model, `${H100_POOL}.4x`).capacity?.whole).toEqual({ onceMaxRequest: 8, remaining: 12, capacity: 16 });
      expect(type(model, `${H100_POOL}.8x`).capacity?.whole).toEqual({ onceMaxRequest: 8, remaining: 8, capacity: 16 });
    });

    it('a whole allocation removes the accelerator from shared and sliced', () => {
      const model = new CapacityModel();
      readyNode(model, 'gpu-1', { gpus: 2 });
      model.setAllocations('gpu-1', { accelerators: { 'nvidia-0': { mode: 'whole' } } });
      const t = type(model, `${H100_POOL}.1x`);

      expect(t.capacity?.shared).toEqual({ onceMaxRequest: 10, remaining: 10, capacity: 20 });
      expect(t.capacity?.sliced?.memoryMib).toEqual({ onceMaxRequest: 81_559, remaining: 81_559, capacity: 163_118 });
      expect(t.capacity?.sliced?.coresPercent).toEqual({ onceMaxRequest: 100, remaining: 100, capacity: 200 });
    });
  });

  describe('shared and sliced accelerators', () => {
    it('shared tokens on an accelerator remove it from whole', () => {
      const model = new CapacityModel();
      readyNode(model, 'gpu-1', { gpus: 2 });
      model.setAllocations('gpu-1', { accelerators: { 'nvidia-1': { mode: 'shared', tokens: 3 } } });
      const t = type(model, `${H100_POOL}.1x`);

      expect(t.capacity?.whole).toEqual({ onceMaxRequest: 1, remaining: 1, capacity: 2 });
      expect(type(model, `${H100_POOL}.2x`).capacity?.whole).toEqual({ onceMaxRequest: 0, remaining: 0, capacity: 2 });
      expect(t.capacity?.shared).toEqual({ onceMaxRequest: 10, remaining: 17, capacity: 20 });
      // A shared accelerator is not sliced.
      expect(t.capacity?.sliced?.coresPercent).toEqual({ onceMaxRequest: 100, remaining: 100, capacity: 200 });
    });

    it('shared onceMaxRequest is the most free tokens on one accelerator', () => {
      const model = new CapacityModel();
      readyNode(model, 'gpu-1', { gpus: 2 });
      model.setAllocations('gpu-1', {
        accelerators: { 'nvidia-0': { mode: 'shared', tokens: 4 }, 'nvidia-1': { mode: 'shared', tokens: 8 } },
      });
      expect(type(model, `${H100_POOL}.1x`).capacity?.shared).toEqual({ onceMaxRequest: 6, remaining: 8, capacity: 20 });
    });

    it('slices subtract memory and cores; onceMaxRequest is the largest free amount on one accelerator', () => {
      const model = new CapacityModel();
      readyNode(model, 'gpu-1', { gpus: 2, gpu: { memoryMib: 80_000 } });
      model.setAllocations('gpu-1', {
        accelerators: {
          'nvidia-0': { mode: 'sliced', slices: [{ memoryMib: 20_000, coresPercent: 30 }, { memoryMib: 10_000, coresPercent: 20 }] },
          'nvidia-1': { mode: 'sliced', slices: [{ memoryMib: 70_000, coresPercent: 10 }] },
        },
      });
      const t = type(model, `${H100_POOL}.1x`);

      expect(t.capacity?.sliced?.memoryMib).toEqual({ onceMaxRequest: 50_000, remaining: 60_000, capacity: 160_000 });
      expect(t.capacity?.sliced?.coresPercent).toEqual({ onceMaxRequest: 90, remaining: 140, capacity: 200 });
      expect(t.capacity?.whole?.remaining).toBe(0);
      expect(t.capacity?.shared?.remaining).toBe(0);
    });
  });

  describe('MIG partitions', () => {
    const migOnFirstGpu = { gpu: A100_80GB, gpuOverrides: { 0: { migEnabled: true } } };

    it('an accelerator with MIG enabled offers partitions only', () => {
      const model = new CapacityModel();
      readyNode(model, 'a100-1', migOnFirstGpu);
      const t = type(model, `${A100_POOL}.1x`);

      expect(t.capacity?.whole).toEqual({ onceMaxRequest: 7, remaining: 7, capacity: 7 });
      expect(t.capacity?.shared?.capacity).toBe(70);
      expect(t.capacity?.sliced?.coresPercent?.capacity).toBe(700);
      expect(t.capacity?.partitioned.map((p) => p.profile)).toEqual([
        '1g.10gb', '1g.10gb+me', '1g.20gb', '2g.20gb', '3g.40gb', '4g.40gb', '7g.80gb',
      ]);
      expect(partition(t, '1g.10gb')).toEqual({ onceMaxRequest: 7, remaining: 7, capacity: 7 });
      expect(partition(t, '1g.10gb+me')).toEqual({ onceMaxRequest: 1, remaining: 1, capacity: 1 });
      expect(partition(t, '1g.20gb')).toEqual({ onceMaxRequest: 4, remaining: 4, capacity: 4 });
      expect(partition(t, '3g.40gb')).toEqual({ onceMaxRequest: 2, remaining: 2, capacity: 2 });
      expect(partition(t, '7g.80gb')).toEqual({ onceMaxRequest: 1, remaining: 1, capacity: 1 });
      expect(model.getPool(A100_POOL)).toMatchObject({ accelerators: 8, migAccelerators: 1 });
    });

    it('a 3g.40gb partition at start 4 leaves room for one more 3g.40gb and blocks 7g.80gb', () => {
      const model = new CapacityModel();
      readyNode(model, 'a100-1', migOnFirstGpu);
      model.setAllocations('a100-1', { migPartitions: [{ acceleratorId: 'nvidia-0', profile: '3g.40gb', start: 4 }] });
      const t = type(model, `${A100_POOL}.1x`);

      expect(partition(t, '3g.40gb')).toEqual({ onceMaxRequest: 1, remaining: 1, capacity: 2 });
      expect(partition(t, '7g.80gb')).toEqual({ onceMaxRequest: 0, remaining: 0, capacity: 1 });
      expect(partition(t, '4g.40gb')).toEqual({ onceMaxRequest: 1, remaining: 1, capacity: 1 });
      expect(partition(t, '1g.10gb')).toEqual({ onceMaxRequest: 4, remaining: 4, capacity: 7 });
    });

    it('a partition the inventory reports holds its slices; an idle one still counts for its profile', () => {
      const model = new CapacityModel();
      readyNode(model, 'a100-1', {
        gpu: A100_80GB,
        gpuOverrides: { 0: { migEnabled: true, migDevices: [migDevice('MIG 3g.40gb', 4, 4), migDevice('1g.10gb', 0, 1)] } },
      });
      let t = type(model, `${A100_POOL}.1x`);
      // The idle 3g.40gb at 4 is offered as is; no new 3g.40gb fits beside the 1g.10gb at 0.
      expect(partition(t, '3g.40gb')).toEqual({ onceMaxRequest: 1, remaining: 1, capacity: 2 });
      expect(partition(t, '1g.10gb')).toEqual({ onceMaxRequest: 4, remaining: 4, capacity: 7 });

      // Giving the existing 3g.40gb to a workload takes it out.
      model.setAllocations('a100-1', { migPartitions: [{ acceleratorId: 'nvidia-0', profile: '3g.40gb', start: 4 }] });
      t = type(model, `${A100_POOL}.1x`);
      expect(partition(t, '3g.40gb')).toEqual({ onceMaxRequest: 0, remaining: 0, capacity: 2 });
      expect(partition(t, '1g.10gb')).toEqual({ onceMaxRequest: 4, remaining: 4, capacity: 7 });
    });

    it('onceMaxRequest for a profile is the most partitions placeable on a single node', () => {
      const model = new CapacityModel();
      readyNode(model, 'a100-1', { gpu: A100_80GB, gpuOverrides: { 0: { migEnabled: true }, 1: { migEnabled: true } } });
      readyNode(model, 'a100-2', migOnFirstGpu);
      const t = type(model, `${A100_POOL}.1x`);
      expect(partition(t, '1g.10gb')).toEqual({ onceMaxRequest: 14, remaining: 21, capacity: 21 });
    });

    it('an L40S pool, whose product has no MIG, offers no partition views', () => {
      const model = new CapacityModel();
      readyNode(model, 'l40s-1', { gpus: 4, gpu: L40S });
      expect(type(model, 'l40s-x86-64.1x').capacity?.partitioned).toEqual([]);
      expect(model.listInstanceTypes().map((t) => t.name)).toEqual(['l40s-x86-64.1x', 'l40s-x86-64.2x', 'l40s-x86-64.4x']);
    });
  });

  describe('node phase', () => {
    it("a NotReady node's capacity leaves every view and returns when Ready", () => {
      const model = new CapacityModel();
      readyNode(model, 'gpu-1');
      readyNode(model, 'gpu-2', { gpuOverrides: { 0: { migEnabled: true } } });
      const before = type(model, `${H100_POOL}.1x`);

      const events = model.setPhase('gpu-2', NOT_READY, { reason: 'HeartbeatMissed' });
      const without = type(model, `${H100_POOL}.1x`);
      expect(events.map((e) => e.type)).toEqual(Array(4).fill(WatchEventType.WATCH_EVENT_TYPE_MODIFIED));
      expect(without.readyNodes).toBe(1);
      expect(without.capacity?.whole).toEqual({ onceMaxRequest: 8, remaining: 8, capacity: 8 });
      expect(without.capacity?.shared?.capacity).toBe(80);
      expect(without.capacity?.sliced?.coresPercent?.capacity).toBe(800);
      expect(partition(without, '1g.10gb')).toEqual({ onceMaxRequest: 0, remaining: 0, capacity: 0 });
      expect(without.capacity?.cpu).toEqual({ onceMaxRequest: 224, remaining: 224, capacity: 224 });
      expect(without.capacity?.memoryMib?.capacity).toBe(2_000_000);
      expect(model.getPool(H100_POOL)).toMatchObject({ readyNodes: 1, accelerators: 8, migAccelerators: 0, nodes: ['gpu-1', 'gpu-2'] });
      expect(model.getNode('gpu-2')?.status).toMatchObject({ phase: NOT_READY, reason: 'HeartbeatMissed' });

      model.setPhase('gpu-2', READY, { reason: 'HeartbeatResumed' });
      const after = type(model, `${H100_POOL}.1x`);
      expect(after.capacity).toEqual(before.capacity);
      expect(after.revision).toBe(before.revision + 2);
    });

    it('a node is not offered until its first Ready phase, which may arrive before its inventory', () => {
      const model = new CapacityModel();
      model.upsertNode(nodeInventory('gpu-1'));
      expect(type(model, `${H100_POOL}.1x`).capacity?.whole?.capacity).toBe(0);

      model.setPhase('gpu-2', READY);
      model.upsertNode(nodeInventory('gpu-2'));
      expect(type(model, `${H100_POOL}.1x`).capacity?.whole?.capacity).toBe(8);
    });
  });

  describe('pools', () => {
    it('nodes differing only in CPU model form two pools', () => {
      const model = new CapacityModel();
      readyNode(model, 'gpu-1');
      readyNode(model, 'gpu-2', { cpuVendor: 'AuthenticAMD', cpuModel: 'AMD EPYC 9654 96-Core Processor' });

      const pools = model.listPools();
      expect(pools).toHaveLength(2);
      const [plain, suffixed] = [model.getPool(H100_POOL), pools.find((p) => p.name !== H100_POOL)];
      expect(plain?.nodes).toEqual(['gpu-1']);
      expect(suffixed?.name).toMatch(new RegExp(`^${H100_POOL}-[0-9a-f]{6}$`));
      expect(suffixed?.nodes).toEqual(['gpu-2']);
      expect(suffixed?.identity?.cpu).toBe('AuthenticAMD AMD EPYC 9654 96-Core Processor');
      expect(model.getNode('gpu-2')?.pool).toBe(suffixed?.name);
    });

    it('pools loaded in one batch are named the same whatever order the nodes arrive in', () => {
      const amd = { cpuVendor: 'AuthenticAMD', cpuModel: 'AMD EPYC 9654 96-Core Processor' };
      const load = (order: string[]): string[] => {
        const model = new CapacityModel();
        model.batch(() => {
          for (const n of order) model.upsertNode(nodeInventory(n, n.startsWith('amd') ? amd : {}));
        });
        return model.listNodes().map((n) => `${n.name}=${n.pool}`);
      };
      expect(load(['amd-1', 'intel-1'])).toEqual(load(['intel-1', 'amd-1']));
    });

    it('of two colliding pools born in one batch, the one with more nodes gets the plain name', () => {
      const amd = { cpuVendor: 'AuthenticAMD', cpuModel: 'AMD EPYC 9654 96-Core Processor' };
      const model = new CapacityModel();
      model.batch(() => {
        model.upsertNode(nodeInventory('amd-1', amd));
        model.upsertNode(nodeInventory('intel-1'));
        model.upsertNode(nodeInventory('intel-2'));
      });
      expect(model.getPool(H100_POOL)?.nodes).toEqual(['intel-1', 'intel-2']);
    });

    it('pinned pool names survive a restart even when another identity arrives first', () => {
      const amd = { cpuVendor: 'AuthenticAMD', cpuModel: 'AMD EPYC 9654 96-Core Processor' };
      const first = new CapacityModel();
      readyNode(first, 'intel-1');
      readyNode(first, 'amd-1', amd);
      const pinned = first.listPools().map((p) => ({ identity: p.identity!, name: p.name }));

      const restarted = new CapacityModel({ pinnedPoolNames: pinned });
      readyNode(restarted, 'amd-1', amd);
      readyNode(restarted, 'intel-1');
      expect(restarted.listPools().map((p) => [p.name, p.nodes])).toEqual(first.listPools().map((p) => [p.name, p.nodes]));
    });

    it('a node whose accelerators are mixed is pooled by the majority product and offers only those', () => {
      const model = new CapacityModel();
      readyNode(model, 'mixed-1', { gpus: 4, gpuOverrides: { 3: L40S } });
      expect(model.getNode('mixed-1')?.pool).toBe(H100_POOL);
      expect(model.getPool(H100_POOL)?.accelerators).toBe(3);
      expect(model.listInstanceTypes().map((t) => t.name)).toEqual([`${H100_POOL}.1x`, `${H100_POOL}.2x`, `${H100_POOL}.3x`]);
      expect(type(model, `${H100_POOL}.3x`).capacity?.whole?.capacity).toBe(3);
    });

    it('a node whose identity changes moves to the other pool, and the emptied pool is deleted', () => {
      const model = new CapacityModel();
      readyNode(model, 'gpu-1');
      const events = model.upsertNode(nodeInventory('gpu-1', { gpu: A100_80GB }));

      expect(model.getNode('gpu-1')).toMatchObject({ pool: A100_POOL, status: { phase: READY } });
      expect(model.listPools().map((p) => p.name)).toEqual([A100_POOL]);
      const byType = (t: WatchEventType) => events.filter((e) => e.type === t).map((e) => e.instanceType.name).sort();
      expect(byType(WatchEventType.WATCH_EVENT_TYPE_DELETED)).toEqual(['1x', '2x', '4x', '8x'].map((s) => `${H100_POOL}.${s}`));
      expect(byType(WatchEventType.WATCH_EVENT_TYPE_ADDED)).toEqual(['1x', '2x', '4x', '8x'].map((s) => `${A100_POOL}.${s}`));
    });

    it('listNodes filters by pool and label selector', () => {
      const model = new CapacityModel();
      readyNode(model, 'gpu-1', { labels: { rack: 'r1', 'nvidia.com/gpu.product': 'H100' } });
      readyNode(model, 'gpu-2', { labels: { rack: 'r2', 'nvidia.com/gpu.product': 'H100' } });
      model.upsertNode(cpuNodeInventory('cpu-1', { labels: { rack: 'r1' } }));

      expect(model.listNodes().map((n) => n.name)).toEqual(['cpu-1', 'gpu-1', 'gpu-2']);
      expect(model.listNodes({ pool: H100_POOL }).map((n) => n.name)).toEqual(['gpu-1', 'gpu-2']);
      expect(model.listNodes({ labelSelector: { rack: 'r1' } }).map((n) => n.name)).toEqual(['cpu-1', 'gpu-1']);
      expect(model.listNodes({ pool: H100_POOL, labelSelector: { rack: 'r1' } }).map((n) => n.name)).toEqual(['gpu-1']);
      expect(model.listNodes({ pool: 'no-such-pool' })).toEqual([]);
    });
  });

  describe('InstanceType families', () => {
    it('a 6-GPU pool offers 1x, 2x, 4x and 6x', () => {
      const model = new CapacityModel();
      readyNode(model, 'gpu-1', { gpus: 6, logicalCpus: 96 });
      expect(model.listInstanceTypes().map((t) => t.unit?.accelerators)).toEqual([1, 2, 4, 6]);
      expect(type(model, `${H100_POOL}.6x`).unit?.vcpu).toBe(96);
      expect(type(model, `${H100_POOL}.4x`).unit?.vcpu).toBe(64);
    });

    it('unit vCPU, memory and storage come from the smallest node so every node can give them', () => {
      const model = new CapacityModel();
      readyNode(model, 'big', { logicalCpus: 224, memoryMib: 2_000_000, localStorageGib: 30_000 });
      readyNode(model, 'small', { logicalCpus: 192, memoryMib: 1_000_000, localStorageGib: 40_000 });
      expect(type(model, `${H100_POOL}.2x`).unit).toMatchObject({ vcpu: 48, memoryMib: 250_000, localStorageGib: 7_500 });
    });

    it('the family changes only when the pool shape changes', () => {
      const model = new CapacityModel();
      readyNode(model, 'gpu-1', { gpus: 4 });
      expect(model.listInstanceTypes().map((t) => t.name)).toEqual(['1x', '2x', '4x'].map((s) => `${H100_POOL}.${s}`));

      const events = readyNode(model, 'gpu-2', { gpus: 8 });
      expect(events.filter((e) => e.type === WatchEventType.WATCH_EVENT_TYPE_ADDED).map((e) => e.instanceType.name)).toEqual([
        `${H100_POOL}.8x`,
      ]);
      model.setPhase('gpu-2', NOT_READY);
      expect(model.listInstanceTypes()).toHaveLength(4);

      const removal = model.removeNode('gpu-2');
      expect(removal.filter((e) => e.type === WatchEventType.WATCH_EVENT_TYPE_DELETED).map((e) => e.instanceType.name)).toEqual([
        `${H100_POOL}.8x`,
      ]);
    });

    it('CPU-only nodes form a CPU pool offering vCPU-sized InstanceTypes', () => {
      const model = new CapacityModel();
      model.upsertNode(cpuNodeInventory('cpu-1', { logicalCpus: 96, memoryMib: 393_216 }));
      model.setPhase('cpu-1', READY);
      const pool = 'cpu-amd-epyc-9654-96-core-x86-64';
      expect(model.listPools().map((p) => p.name)).toEqual([pool]);
      expect(model.listInstanceTypes().map((t) => t.name)).toEqual(
        ['4c', '8c', '16c', '32c', '64c', '96c'].map((s) => `${pool}.${s}`),
      );
      const t = type(model, `${pool}.16c`);
      expect(t.unit).toEqual({ accelerators: 0, vcpu: 16, memoryMib: 65_536, localStorageGib: 583, acceleratorMemoryMib: 0 });
      expect(t.creditPrice).toBe(16 * CREDITS_PER_VCPU);
      expect(t.acceleratorProduct).toBe('');
      expect(t.capacity?.cpu).toEqual({ onceMaxRequest: 96, remaining: 96, capacity: 96 });
      expect(t.capacity?.whole).toEqual({ onceMaxRequest: 0, remaining: 0, capacity: 0 });
      expect(t.capacity?.partitioned).toEqual([]);
    });

    it('vCPU and memory allocations reduce the cpu and memory views', () => {
      const model = new CapacityModel();
      readyNode(model, 'gpu-1');
      readyNode(model, 'gpu-2');
      model.setAllocations('gpu-1', { vcpu: 200, memoryMib: 1_500_000 });
      const t = type(model, `${H100_POOL}.1x`);
      expect(t.capacity?.cpu).toEqual({ onceMaxRequest: 224, remaining: 248, capacity: 448 });
      expect(t.capacity?.memoryMib).toEqual({ onceMaxRequest: 2_000_000, remaining: 2_500_000, capacity: 4_000_000 });
    });
  });

  describe('events', () => {
    it('a new pool announces its family as ADDED, later changes as MODIFIED with a higher revision', () => {
      const model = new CapacityModel();
      const added = model.upsertNode(nodeInventory('gpu-1', { gpus: 2 }));
      expect(added.map((e) => [e.type, e.instanceType.name, e.instanceType.revision])).toEqual([
        [WatchEventType.WATCH_EVENT_TYPE_ADDED, `${H100_POOL}.1x`, 1],
        [WatchEventType.WATCH_EVENT_TYPE_ADDED, `${H100_POOL}.2x`, 1],
      ]);
      const ready = model.setPhase('gpu-1', READY);
      expect(ready.map((e) => [e.type, e.instanceType.revision])).toEqual([
        [WatchEventType.WATCH_EVENT_TYPE_MODIFIED, 2],
        [WatchEventType.WATCH_EVENT_TYPE_MODIFIED, 2],
      ]);
    });

    it('an inventory update that changes no capacity causes no events', () => {
      const model = new CapacityModel();
      readyNode(model, 'gpu-1');
      const inventory = nodeInventory('gpu-1', { generation: 2 });
      inventory.accelerators[0].temperatureCelsius = 71;
      expect(model.upsertNode(inventory)).toEqual([]);
      expect(model.setPhase('gpu-1', READY)).toEqual([]);
      expect(model.setAllocations('gpu-1', {})).toEqual([]);
      expect(model.getNode('gpu-1')?.inventory?.generation).toBe(2);
    });

    it('a change to a view every InstanceType carries modifies the whole family, with the new content', () => {
      const model = new CapacityModel();
      readyNode(model, 'gpu-1', { gpus: 2 });
      // A second token on an already shared accelerator changes only the shared view.
      model.setAllocations('gpu-1', { accelerators: { 'nvidia-0': { mode: 'shared', tokens: 1 } } });
      const events = model.setAllocations('gpu-1', { accelerators: { 'nvidia-0': { mode: 'shared', tokens: 2 } } });
      expect(events.map((e) => e.instanceType.capacity?.shared?.remaining)).toEqual([18, 18]);
    });

    it('a batch reports one coalesced event per InstanceType', () => {
      const model = new CapacityModel();
      const events = model.batch(() => {
        for (let i = 0; i < 5; i++) {
          model.upsertNode(nodeInventory(`gpu-${i}`));
          model.setPhase(`gpu-${i}`, READY);
        }
      });
      expect(events).toHaveLength(4);
      expect(events.every((e) => e.type === WatchEventType.WATCH_EVENT_TYPE_ADDED && e.instanceType.revision === 1)).toBe(true);
      expect(events[0].instanceType.capacity?.whole?.capacity).toBe(40);
    });

    it('removing the last node of a pool deletes its InstanceTypes; a returning pool continues the revisions', () => {
      const model = new CapacityModel();
      readyNode(model, 'gpu-1', { gpus: 1 });
      const removed = model.removeNode('gpu-1');
      expect(removed.map((e) => [e.type, e.instanceType.name])).toEqual([[WatchEventType.WATCH_EVENT_TYPE_DELETED, `${H100_POOL}.1x`]]);
      expect(model.listPools()).toEqual([]);
      expect(model.getInstanceType(`${H100_POOL}.1x`)).toBeUndefined();

      const back = model.upsertNode(nodeInventory('gpu-1', { gpus: 1 }));
      expect(back.map((e) => [e.type, e.instanceType.revision])).toEqual([[WatchEventType.WATCH_EVENT_TYPE_ADDED, 3]]);
    });
  });

  it('rejects an inventory without a node name', () => {
    expect(() => new CapacityModel().upsertNode(nodeInventory(''))).toThrow(/INVALID_ARGUMENT/);
  });
});
