import { admit, engineWith, node, podPlacement, request, slice, whole } from './__fixtures__/fleet';

const ALL = Array.from({ length: 8 }, (_, i) => `nvidia-${i}`);

const nodesOf = (placements: { node: string }[]): string[] => placements.map((p) => p.node).sort();

describe('PlacementEngine: topology', () => {
  it('a required rack keeps all pods of a replica in one rack, even when other racks list free nodes first', () => {
    const engine = engineWith(node('a1', { rack: 'rack-a' }), node('a2', { rack: 'rack-a' }), node('b1', { rack: 'rack-b' }), node('b2', { rack: 'rack-b' }));
    admit(engine, request('x/half', [whole(4)]));
    const placements = admit(engine, request('x/gang', [whole(8, { size: 2, required: 'rack' })]));
    const racks = new Set(placements.map((p) => (p.node.startsWith('a') ? 'rack-a' : 'rack-b')));
    expect(racks.size).toBe(1);
    expect(placements.every((p) => p.acceleratorIds.length === 8)).toBe(true);
  });

  it('of the racks that fit, the tightest one is used, so roomy racks stay free for larger gangs', () => {
    const engine = engineWith(
      node('a1', { rack: 'rack-a' }),
      node('a2', { rack: 'rack-a' }),
      node('a3', { rack: 'rack-a' }),
      node('b1', { rack: 'rack-b' }),
      node('b2', { rack: 'rack-b' }),
    );
    expect(nodesOf(admit(engine, request('x/gang', [whole(8, { size: 2, required: 'rack' })])))).toEqual(['b1', 'b2']);
    expect(nodesOf(admit(engine, request('y/gang', [whole(8, { size: 3, required: 'rack' })])))).toEqual(['a1', 'a2', 'a3']);
  });

  it('replicas are placed independently: each finds its own rack', () => {
    const engine = engineWith(node('a1', { rack: 'rack-a' }), node('a2', { rack: 'rack-a' }), node('b1', { rack: 'rack-b' }), node('b2', { rack: 'rack-b' }));
    const placements = admit(engine, request('x/two-replicas', [whole(8, { count: 2, size: 2, required: 'rack' })]));
    const byReplica = [0, 1].map((r) => nodesOf(placements.filter((p) => p.replica === r)));
    expect(byReplica.map((nodes) => nodes[0][0])).toEqual(expect.arrayContaining(['a', 'b']));
    for (const nodes of byReplica) expect(new Set(nodes.map((n) => n[0])).size).toBe(1);
  });

  it('a preferred level is tried first, then wider levels, then anywhere', () => {
    const fleet = (): ReturnType<typeof engineWith> =>
      engineWith(
        node('n1', { rack: 'rack-a', nvlinkDomain: 'nvl-1' }),
        node('n2', { rack: 'rack-a', nvlinkDomain: 'nvl-1' }),
        node('n3', { rack: 'rack-a', nvlinkDomain: 'nvl-2' }),
        node('n4', { rack: 'rack-b', zone: 'zone-b', nvlinkDomain: 'nvl-3' }),
      );
    const gang = whole(8, { size: 2, preferred: 'nvlink-domain' });
    expect(nodesOf(admit(fleet(), request('x/g', [gang])))).toEqual(['n1', 'n2']);

    const noSharedDomain = fleet();
    noSharedDomain.commit('busy/n2', [podPlacement('n2', { ids: ALL })]);
    expect(nodesOf(admit(noSharedDomain, request('x/g', [gang])))).toEqual(['n1', 'n3']);

    const onlyAnywhere = engineWith(node('n1', { rack: 'rack-a', zone: 'zone-a' }), node('n4', { rack: 'rack-b', zone: 'zone-b' }));
    expect(nodesOf(admit(onlyAnywhere, request('x/g', [gang])))).toEqual(['n1', 'n4']);
  });

  it('a preferred level that does not nest inside the required one is kept inside the required one', () => {
    // nvl-x spans two racks (e.g. a multi-rack NVLink fabric); the replica must still stay in one rack.
    const engine = engineWith(
      node('n1', { rack: 'rack-a', nvlinkDomain: 'nvl-x' }),
      node('n2', { rack: 'rack-b', nvlinkDomain: 'nvl-x' }),
      node('n3', { rack: 'rack-a', nvlinkDomain: 'nvl-y' }),
    );
    const placed = admit(engine, request('x/g', [whole(8, { size: 2, required: 'rack', preferred: 'nvlink-domain' })]));
    expect(nodesOf(placed)).toEqual(['n1', 'n3']);
  });

  it('an empty label makes each node its own domain at that level', () => {
    const engine = engineWith(node('n1', { rack: '' }), node('n2', { rack: '' }));
    expect(engine.tryPlace(request('x/g', [whole(8, { size: 2, required: 'rack' })]))).toMatchObject({
      ok: false,
      reason: 'TopologyUnsatisfiable',
    });
    const pair = nodesOf(admit(engine, request('y/g', [whole(4, { size: 2, required: 'rack' })])));
    expect(pair).toHaveLength(2);
    expect(pair[0]).toBe(pair[1]); // both on one node: the only "rack" that holds them
  });

  it('required "node" puts every pod of the replica on one node', () => {
    const engine = engineWith(node('n1'), node('n2'));
    admit(engine, request('x/six', [whole(6)]));
    expect(new Set(nodesOf(admit(engine, request('y/g', [whole(2, { size: 4, required: 'node' })])))).size).toBe(1);
  });

  it('topology applies to slices too: slice pods of one replica share the required domain', () => {
    const engine = engineWith(node('n1', { gpus: 1 }), node('n2', { gpus: 1 }));
    admit(engine, request('x/big', [slice({ memoryPercent: 60, coresPercent: 60 })]));
    const placed = admit(engine, request('y/pair', [slice({ memoryPercent: 30, coresPercent: 30 }, { size: 2, required: 'node' })]));
    expect(new Set(nodesOf(placed)).size).toBe(1);
    expect(engine.tryPlace(request('z/pair', [slice({ memoryPercent: 30, coresPercent: 30 }, { size: 2, required: 'node' })]))).toMatchObject({
      ok: false,
      reason: 'TopologyUnsatisfiable',
    });
  });

  it('a one-pod replica satisfies any required level', () => {
    const engine = engineWith(node('n1', { rack: '' }));
    expect(engine.tryPlace(request('x/one', [whole(8, { required: 'zone' })]))).toMatchObject({ ok: true });
  });

  it('explains which domain came closest when no domain of the required level fits', () => {
    const engine = engineWith(node('a1', { rack: 'r-06' }), node('a2', { rack: 'r-06' }), node('b1', { rack: 'r-07' }), node('c1', { rack: 'r-08' }));
    engine.commit('x/busy', [podPlacement('a1', { ids: ['nvidia-0'] }), podPlacement('c1', { pod: 1, ids: ['nvidia-0'] })]);
    const outcome = engine.tryPlace(request('y/g', [whole(8, { size: 2, required: 'rack' })]));
    expect(outcome).toMatchObject({ ok: false, reason: 'TopologyUnsatisfiable' });
    if (!outcome.ok) {
      expect(outcome.message).toMatch(/^pod set "main": 2 pods × 8 whole accelerators need one rack; the best rack has 1 fully free node \(rack r-06\)$/);
      expect(outcome.largestFreeBlock).toMatch(/^1 pod × 8 whole accelerators in one rack \(rack r-06\)$/);
    }
  });

  it('an unknown level is refused with the levels there are', () => {
    const engine = engineWith(node('n1'));
    expect(engine.tryPlace(request('x/g', [whole(1, { required: 'row' })]))).toMatchObject({
      ok: false,
      reason: 'TopologyUnsatisfiable',
      message: 'pod set "main" asks for required topology level "row"; levels are node, nvlink-domain, rack, zone',
    });
  });
});
