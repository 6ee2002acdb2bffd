import { LinkType } from '@gpufleet/contracts';
import { admit, engineWith, link, node, POOL, request, shared, slice, where, whole } from './__fixtures__/fleet';

const ids = (...indexes: number[]): string[] => indexes.map((i) => `nvidia-${i}`);

describe('PlacementEngine: whole accelerators', () => {
  it('bin-packs: the node with the fewest free accelerators that fits wins', () => {
    const engine = engineWith(node('n1'), node('n2'), node('n3'));
    const [six] = admit(engine, request('a/six', [whole(6)]));
    const [four] = admit(engine, request('a/four', [whole(4)])); // too big for the 2 left beside "six"
    expect(four.node).not.toBe(six.node);
    expect(where(admit(engine, request('b/two', [whole(2)])))).toEqual([`${six.node}:nvidia-6,nvidia-7`]);
    expect(where(admit(engine, request('b/three', [whole(3)])))).toEqual([`${four.node}:nvidia-4,nvidia-5,nvidia-6`]);
  });

  it('keeps fully free nodes for 8-accelerator pods', () => {
    const engine = engineWith(node('n1'), node('n2'));
    admit(engine, request('a/one', [whole(1)]));
    admit(engine, request('a/one-more', [whole(1)]));
    expect(where(admit(engine, request('a/eight', [whole(8)])))).toEqual([`n2:${ids(0, 1, 2, 3, 4, 5, 6, 7).join(',')}`]);
  });

  it('within a node, takes the best-connected free accelerators (an NVLinked pair over PCIe neighbours)', () => {
    const links = [];
    for (let a = 0; a < 8; a++) {
      for (let b = a + 1; b < 8; b++) {
        const bridged = b === a + 1 && a % 2 === 0;
        links.push(link(a, b, bridged ? LinkType.LINK_TYPE_NVLINK : a < 4 === b < 4 ? LinkType.LINK_TYPE_PXB : LinkType.LINK_TYPE_SYS, bridged ? 4 : undefined));
      }
    }
    const engine = engineWith(node('pcie', { links }));
    admit(engine, request('a/one', [whole(1)]));
    expect(where(admit(engine, request('a/pair', [whole(2)])))).toEqual(['pcie:nvidia-2,nvidia-3']);
  });

  it('never gives a MIG-enabled accelerator whole', () => {
    const engine = engineWith(node('n1', { mig: { 0: [], 1: [], 2: [], 3: [] } }));
    expect(engine.tryPlace(request('a/five', [whole(5)]))).toMatchObject({ ok: false, reason: 'NoFit' });
    expect(where(admit(engine, request('a/four', [whole(4)])))).toEqual([`n1:${ids(4, 5, 6, 7).join(',')}`]);
  });

  it('accelerators in shared or sliced use are not free as a whole', () => {
    const engine = engineWith(node('n1', { gpus: 2 }));
    admit(engine, request('a/tokens', [shared(1)]));
    admit(engine, request('a/slice', [slice({ memoryMib: 1024, coresPercent: 5 })]));
    expect(engine.tryPlace(request('b/one', [whole(1)]))).toMatchObject({ ok: false, reason: 'NoFit' });
  });

  it("a pod's vCPU and memory must fit on the node too", () => {
    const engine = engineWith(node('n1', { logicalCpus: 64 }), node('n2', { logicalCpus: 64, nodeMemoryMib: 100_000 }));
    admit(engine, request('a/cpu-heavy', [whole(1, { vcpu: 60 })])); // n1 (first), 4 vCPU left
    expect(where(admit(engine, request('b/next', [whole(1, { vcpu: 8 })])))).toEqual(['n2:nvidia-0']);
    expect(engine.tryPlace(request('c/memory', [whole(1, { memoryMib: 2_500_000 })]))).toMatchObject({ ok: false });
    const [pod] = admit(engine, request('d/sized', [whole(1, { vcpu: 4, memoryMib: 1000 })]));
    expect(pod).toMatchObject({ vcpu: 4, memoryMib: 1000 });
  });

  it('uses only Ready nodes of the requested pool', () => {
    const engine = engineWith(node('n1'));
    engine.upsertNode(node('n2'), false, POOL);
    engine.upsertNode(node('other'), true, 'a100');
    admit(engine, request('a/eight', [whole(8)]));
    expect(engine.tryPlace(request('b/eight', [whole(8)]))).toMatchObject({ ok: false, reason: 'NoFit' });
    engine.upsertNode(node('n2'), true, POOL);
    expect(where(admit(engine, request('b/eight', [whole(8)])))[0]).toMatch(/^n2:/);
  });

  it('pods of one workload never share an accelerator', () => {
    const engine = engineWith(node('n1'));
    const placements = admit(engine, request('a/four-by-two', [whole(4, { count: 2 })]));
    expect(new Set(placements.flatMap((p) => p.acceleratorIds)).size).toBe(8);
    expect(engine.tryPlace(request('b/one', [whole(1)]))).toMatchObject({ ok: false });
    expect(engineWith(node('n1')).tryPlace(request('c/three-by-three', [whole(3, { count: 3 })]))).toMatchObject({ ok: false });
  });

  it('numbers replicas and pods from 0 and lists them by pod set, replica, pod', () => {
    const engine = engineWith(node('n1'), node('n2'));
    const placements = admit(engine, request('a/tp', [whole(2, { count: 2, size: 2 })]));
    expect(placements.map((p) => [p.podSet, p.replica, p.pod])).toEqual([
      ['main', 0, 0],
      ['main', 0, 1],
      ['main', 1, 0],
      ['main', 1, 1],
    ]);
  });
});
