import { ledgerConflicts } from '../ledger';
import { PlacementEngine } from './placement-engine';
import { A100, admit, engineWith, node, partition, podPlacement, POOL, request, shared, where, whole } from './__fixtures__/fleet';

describe('PlacementEngine: the devices ledger', () => {
  it('commit records one entry per pod in the ledger of its node', () => {
    const engine = engineWith(node('n1', { gpus: 2 }), node('n2', { gpus: 2 }));
    const placements = admit(engine, request('a/train', [whole(2, { count: 2, vcpu: 8, memoryMib: 1024 })]));
    expect(engine.nodesTouchedBy('a/train')).toEqual(['n1', 'n2']);
    expect(engine.placementsOf('a/train')).toEqual(placements);
    expect(engine.ledgerOf('n1').entries).toHaveLength(1);
    expect(engine.ledgerOf('n1').entries[0].workload).toBe('a/train');
    expect(engine.allocationsOf('n1')).toEqual({
      vcpu: 8,
      memoryMib: 1024,
      accelerators: { 'nvidia-0': { mode: 'whole' }, 'nvidia-1': { mode: 'whole' } },
    });
  });

  it('commit re-checks every pod: stale placements are refused and nothing is recorded', () => {
    const engine = engineWith(node('n1', { gpus: 2 }));
    const stale = engine.tryPlace(request('a/one', [whole(2)]));
    admit(engine, request('b/one', [whole(1)]));
    if (!stale.ok) throw new Error('expected a placement');
    expect(() => engine.commit('a/one', stale.placements)).toThrow(
      'FAILED_PRECONDITION: commit of a/one: a/one pod main/0/0: accelerator nvidia-0 of node n1 is not free',
    );
    expect(engine.nodesTouchedBy('a/one')).toEqual([]);
    expect(engine.auditIndexes()).toEqual([]);
  });

  it('commit refuses pods that double-book each other, unknown nodes and a second commit of the key', () => {
    const engine = engineWith(node('n1', { gpus: 1 }));
    expect(() => engine.commit('a/x', [podPlacement('n1', { ids: ['nvidia-0'] }), podPlacement('n1', { pod: 1, ids: ['nvidia-0'] })])).toThrow(
      /a\/x pod main\/0\/1: accelerator nvidia-0 of node n1 is not free/,
    );
    expect(() => engine.commit('a/x', [podPlacement('n9', { ids: ['nvidia-0'] })])).toThrow(/node n9 is unknown/);
    expect(() => engine.commit('a/x', [podPlacement('n1'), podPlacement('n1')])).toThrow(/a\/x pod main\/0\/0: the pod is listed twice/);
    expect(engine.commit('a/x', [podPlacement('n1', { ids: ['nvidia-0'], tokens: 4 })])).toEqual(['n1']);
    expect(() => engine.commit('a/x', [podPlacement('n1', { ids: ['nvidia-0'], tokens: 4 })])).toThrow(/already holds devices/);
    expect(() => engine.commit('b/x', [podPlacement('n1', { ids: ['nvidia-0'], tokens: 7 })])).toThrow(/has 6 free shared tokens, the pod asks 7/);
  });

  it('release returns exactly what the workload held; releasing an unknown key does nothing', () => {
    const engine = engineWith(node('n1'));
    admit(engine, request('a/keep', [whole(3)]));
    const before = engine.allocationsOf('n1');
    admit(engine, request('b/go', [whole(2), shared(3, { name: 'side' })]));
    expect(engine.release('b/go')).toEqual(['n1']);
    expect(engine.release('never/admitted')).toEqual([]);
    expect(engine.allocationsOf('n1')).toEqual(before);
    expect(engine.nodesTouchedBy('b/go')).toEqual([]);
    expect(engine.auditIndexes()).toEqual([]);
  });

  it('loadLedger rebuilds the state from the store, and reports conflicts in it', () => {
    const original = engineWith(node('n1'), node('n2'));
    admit(original, request('a/train', [whole(8)]));
    admit(original, request('b/chat', [shared(4)]));
    const ledgers = ['n1', 'n2'].map((n) => original.ledgerOf(n));

    const restarted = engineWith(node('n1'), node('n2'));
    expect(restarted.loadLedger(ledgers)).toEqual([]);
    for (const n of ['n1', 'n2']) expect(restarted.allocationsOf(n)).toEqual(original.allocationsOf(n));
    expect(restarted.tryPlace(request('c/eight', [whole(8)]))).toMatchObject({ ok: false });
    expect(restarted.auditIndexes()).toEqual([]);

    const broken = [{ node: 'n1', entries: [...ledgers[0].entries, { workload: 'z/dup', pod: podPlacement('n1', { ids: ['nvidia-0'] }) }] }];
    expect(restarted.loadLedger(broken)).toEqual([expect.stringContaining('accelerator nvidia-0 of node n1 is held whole by 2 pods')]);
  });

  it('entries for a node not yet known take effect when it arrives; a removed node keeps its entries', () => {
    const engine = new PlacementEngine();
    engine.loadLedger([{ node: 'n1', entries: [{ workload: 'a/x', pod: podPlacement('n1', { ids: ['nvidia-0', 'nvidia-1'] }) }] }]);
    engine.upsertNode(node('n1', { gpus: 2 }), true, POOL);
    expect(engine.tryPlace(request('b/one', [whole(1)]))).toMatchObject({ ok: false });
    engine.removeNode('n1');
    expect(engine.ledgerOf('n1').entries).toHaveLength(1);
    engine.upsertNode(node('n1', { gpus: 2 }), true, POOL);
    expect(engine.tryPlace(request('b/one', [whole(1)]))).toMatchObject({ ok: false });
    engine.release('a/x');
    expect(engine.tryPlace(request('b/one', [whole(1)]))).toMatchObject({ ok: true });
  });

  it('a NotReady node is not placed on, but what it holds stays held', () => {
    const engine = engineWith(node('n1', { gpus: 2 }));
    admit(engine, request('a/x', [whole(1)]));
    engine.upsertNode(node('n1', { gpus: 2 }), false, POOL);
    expect(engine.tryPlace(request('b/x', [whole(1)]))).toMatchObject({ ok: false, reason: 'PoolUnavailable' });
    engine.upsertNode(node('n1', { gpus: 2 }), true, POOL);
    expect(where(admit(engine, request('b/x', [whole(1)])))).toEqual(['n1:nvidia-1']);
  });

  it('an inventory change re-derives the node from its entries (a GPU switched to MIG offers partitions only)', () => {
    const engine = engineWith(node('n1', { gpus: 2, product: A100 }));
    admit(engine, request('a/x', [whole(1)]));
    engine.upsertNode(node('n1', { gpus: 2, product: A100, mig: { 1: [] } }), true, POOL);
    expect(engine.tryPlace(request('b/x', [whole(1)]))).toMatchObject({ ok: false });
    expect(engine.tryPlace(request('b/p', [{ ...whole(1), resources: { accelerator: { partitionProfile: '1g.10gb' }, vcpu: 0, memoryMib: 0 } }]))).toMatchObject({
      ok: true,
    });
    expect(ledgerConflicts(engine.ledgerOf('n1'), node('n1', { gpus: 2, product: A100, mig: { 1: [] } }))).toEqual([]);
  });

  it('a device whose entries contradict its new mode offers nothing until they are released', () => {
    const plain = node('n1', { gpus: 1, product: A100 });
    const withMig = node('n1', { gpus: 1, product: A100, mig: { 0: [] } });
    const engine = engineWith(plain);
    admit(engine, request('a/whole', [whole(1)]));
    engine.upsertNode(withMig, true, POOL); // MIG switched on under a running whole pod
    expect(engine.tryPlace(request('b/p', [partition('1g.10gb')]))).toMatchObject({ ok: false });
    engine.release('a/whole');
    admit(engine, request('b/p', [partition('1g.10gb')]));
    engine.upsertNode(plain, true, POOL); // and off again under a running partition
    expect(engine.tryPlace(request('c/w', [whole(1)]))).toMatchObject({ ok: false });
    expect(engine.tryPlace(request('c/s', [shared(1)]))).toMatchObject({ ok: false });
    expect(engine.auditIndexes()).toEqual([]);
    engine.release('b/p');
    expect(engine.tryPlace(request('c/w', [whole(1)]))).toMatchObject({ ok: true });
  });

  it('the ledger never changes when callers mutate what they passed to commit', () => {
    const engine = engineWith(node('n1', { gpus: 2 }));
    const outcome = engine.tryPlace(request('a/x', [whole(1)]));
    if (!outcome.ok) throw new Error('expected a placement');
    engine.commit('a/x', outcome.placements);
    outcome.placements[0].acceleratorIds[0] = 'nvidia-1';
    expect(engine.placementsOf('a/x')[0].acceleratorIds).toEqual(['nvidia-0']);
  });
});
