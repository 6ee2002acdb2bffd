import { NodeInventory, NodePhase } from '@gpufleet/contracts';
import { CapacityModel } from '@gpufleet/capacity-core';
import { PlacementEngine } from './placement-engine';
import { A100, admit, engineWith, migDevice, node, partition, request, where, whole } from './__fixtures__/fleet';

const a100 = (name: string, mig: NodeInventory['accelerators'][number]['migDevices'][] = [[], []]): NodeInventory =>
  node(name, { gpus: mig.length, product: A100, mig: Object.fromEntries(mig.map((devices, i) => [i, devices])) });

describe('PlacementEngine: MIG partitions', () => {
  it('an existing idle partition of the profile is used before a new one is carved', () => {
    const engine = engineWith(a100('n1', [[], [migDevice('3g.40gb', 4, 4)]]));
    expect(where(admit(engine, request('a/p', [partition('3g.40gb')])))).toEqual(['n1:nvidia-1@3g.40gb:4']);
  });

  it('new partitions go only at valid starts in free slices, never over existing partitions', () => {
    const engine = engineWith(a100('n1', [[migDevice('2g.20gb', 0, 2)]]));
    // 3g.40gb starts at 0 or 4; slices 0-1 are an existing 2g partition.
    expect(where(admit(engine, request('a/p', [partition('3g.40gb')])))).toEqual(['n1:nvidia-0@3g.40gb:4']);
    expect(engine.tryPlace(request('b/p', [partition('3g.40gb')]))).toMatchObject({ ok: false, reason: 'NoFit' });
    // Slices 2-3 are still free for a 2g.20gb (starts 0, 2, 4), and the existing one is idle.
    expect(where(admit(engine, request('c/p', [partition('2g.20gb', { count: 2 })])))).toEqual([
      'n1:nvidia-0@2g.20gb:0',
      'n1:nvidia-0@2g.20gb:2',
    ]);
  });

  it('small partitions are carved where they leave the most room for large ones', () => {
    const engine = engineWith(a100('n1', [[]]));
    admit(engine, request('a/small', [partition('1g.10gb')]));
    // The 1g went where a 4g.40gb (start 0 only) and a 3g.40gb can still fit.
    expect(where(admit(engine, request('b/4g', [partition('4g.40gb')])))).toEqual(['n1:nvidia-0@4g.40gb:0']);
  });

  it('binpack fills the most used GPU first; spread the least used', () => {
    const engine = engineWith(a100('n1', [[], [], []]));
    const [first] = admit(engine, request('a/1', [partition('1g.10gb')]));
    const [packed] = admit(engine, request('a/2', [partition('1g.10gb')]));
    expect(packed.partition?.acceleratorId).toBe(first.partition?.acceleratorId);
    const [spread] = admit(engine, request('a/3', [partition('1g.10gb')], 'spread'));
    expect(spread.partition?.acceleratorId).not.toBe(first.partition?.acceleratorId);
  });

  it('at most one "+me" partition per GPU holds the media engines', () => {
    const engine = engineWith(a100('n1', [[]]));
    admit(engine, request('a/me', [partition('1g.10gb+me')]));
    expect(engine.tryPlace(request('b/me', [partition('1g.10gb+me')]))).toMatchObject({ ok: false });
    expect(engine.tryPlace(request('b/plain', [partition('1g.10gb')]))).toMatchObject({ ok: true });
  });

  it('profile names are matched case- and prefix-insensitively', () => {
    const engine = engineWith(a100('n1', [[]]));
    expect(where(admit(engine, request('a/p', [partition('MIG 7G.80GB')])))).toEqual(['n1:nvidia-0@7g.80gb:0']);
  });

  it('GPUs without MIG never give partitions, and MIG GPUs never give whole accelerators', () => {
    const engine = engineWith(node('plain', { product: A100, gpus: 1 }), a100('mig', [[]]));
    expect(where(admit(engine, request('a/p', [partition('1g.10gb')])))[0]).toMatch(/^mig:/);
    expect(where(admit(engine, request('a/w', [whole(1)])))[0]).toMatch(/^plain:/);
  });

  it('releasing a new partition frees its slices; releasing an existing one makes it idle again', () => {
    const engine = engineWith(a100('n1', [[migDevice('4g.40gb', 0, 4)]]));
    admit(engine, request('a/existing', [partition('4g.40gb')]));
    admit(engine, request('a/new', [partition('3g.40gb')]));
    expect(engine.tryPlace(request('b/any', [partition('1g.10gb')]))).toMatchObject({ ok: false });
    engine.release('a/new');
    engine.release('a/existing');
    expect(where(admit(engine, request('c/existing', [partition('4g.40gb')])))).toEqual(['n1:nvidia-0@4g.40gb:0']);
    expect(where(admit(engine, request('c/new', [partition('3g.40gb')])))).toEqual(['n1:nvidia-0@3g.40gb:4']);
  });

  it('agrees with the capacity views: a profile is placeable exactly when its partitions remain', () => {
    const inventory = a100('n1', [[migDevice('3g.40gb', 0, 4)], [], []]);
    const capacity = new CapacityModel();
    capacity.upsertNode(inventory);
    capacity.setPhase('n1', NodePhase.NODE_PHASE_READY);
    const pool = capacity.getNode('n1')?.pool ?? '';
    const engine = new PlacementEngine();
    engine.upsertNode(inventory, true, pool);
    const profiles = ['1g.10gb', '1g.20gb', '2g.20gb', '3g.40gb', '4g.40gb', '7g.80gb', '1g.10gb+me'];
    const remaining = (profile: string): number => {
      const type = capacity.listInstanceTypes(pool)[0];
      return type.capacity?.partitioned.find((p) => p.profile === profile)?.view?.remaining ?? 0;
    };
    const sequence = ['3g.40gb', '1g.10gb', '2g.20gb', '1g.10gb+me', '4g.40gb', '1g.20gb', '3g.40gb', '1g.10gb', '7g.80gb'];
    sequence.forEach((profile, i) => {
      const outcome = engine.tryPlace(request(`w/${i}`, [partition(profile)], 'binpack', pool));
      if (outcome.ok) engine.commit(`w/${i}`, outcome.placements);
      capacity.setAllocations('n1', engine.allocationsOf('n1'));
      for (const p of profiles) {
        const placeable = engine.tryPlace(request('probe/x', [partition(p)], 'binpack', pool)).ok;
        expect({ step: i, profile: p, placeable }).toEqual({ step: i, profile: p, placeable: remaining(p) > 0 });
      }
    });
  });
});
