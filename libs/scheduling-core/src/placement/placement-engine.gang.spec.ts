import { PlacementEngine } from './placement-engine';
import { admit, engineWith, migDevice, node, partition, request, shared, whole } from './__fixtures__/fleet';

function allocations(engine: PlacementEngine, nodes: string[]): string {
  return JSON.stringify(nodes.map((n) => engine.allocationsOf(n)));
}

describe('PlacementEngine: gangs (all pod sets of a workload together, or none)', () => {
  it('when one pod set does not fit, nothing of the workload is placed and the state is unchanged', () => {
    const engine = engineWith(node('n1'), node('n2'));
    admit(engine, request('a/base', [whole(3)]));
    const before = allocations(engine, ['n1', 'n2']);
    const outcome = engine.tryPlace(request('b/gang', [whole(4, { name: 'fits' }), whole(8, { name: 'too-big', count: 2 })]));
    expect(outcome).toMatchObject({ ok: false, reason: 'NoFit' });
    expect(allocations(engine, ['n1', 'n2'])).toBe(before);
    expect(engine.auditIndexes()).toEqual([]);
    expect(engine.tryPlace(request('c/fits', [whole(4)]))).toMatchObject({ ok: true });
  });

  it('tryPlace never changes state, whether it succeeds or not', () => {
    const engine = engineWith(node('n1'));
    const first = engine.tryPlace(request('a/x', [whole(8)]));
    const second = engine.tryPlace(request('a/x', [whole(8)]));
    expect(second).toEqual(first);
    expect(engine.ledgerOf('n1').entries).toEqual([]);
    expect(engine.nodesTouchedBy('a/x')).toEqual([]);
  });

  it('pods of different pod sets in one call never double-book a device', () => {
    const engine = engineWith(node('n1', { gpus: 4, mig: { 3: [migDevice('3g.40gb', 0, 4)] } }));
    const placements = admit(
      engine,
      request('a/mixed', [
        whole(1, { name: 'w' }),
        shared(6, { name: 's1' }),
        shared(5, { name: 's2' }),
        partition('3g.40gb', { name: 'p', count: 2 }),
      ]),
    );
    const wholeId = placements.find((p) => p.podSet === 'w')?.acceleratorIds[0];
    const sharedIds = placements.filter((p) => p.podSet.startsWith('s')).map((p) => p.acceleratorIds[0]);
    expect(sharedIds).not.toContain(wholeId);
    expect(new Set(sharedIds).size).toBe(2); // 6 + 5 tokens do not fit one accelerator
    const starts = placements.filter((p) => p.podSet === 'p').map((p) => p.partition?.start);
    expect(starts.sort()).toEqual([0, 4]);
  });

  it('the hardest pod set is placed first, so small pods do not fragment the rack a gang needs', () => {
    const engine = engineWith(node('a1', { rack: 'rack-a' }), node('a2', { rack: 'rack-a' }), node('b1', { rack: 'rack-b' }));
    const placements = admit(
      engine,
      request('a/pd', [whole(1, { name: 'decode', count: 4 }), whole(8, { name: 'prefill', size: 2, required: 'rack' })]),
    );
    expect(placements.filter((p) => p.podSet === 'prefill').map((p) => p.node).sort()).toEqual(['a1', 'a2']);
    expect(placements.filter((p) => p.podSet === 'decode').every((p) => p.node === 'b1')).toBe(true);
    // The outcome still lists pod sets in request order.
    expect(placements[0].podSet).toBe('decode');
  });

  it('explains a gang that fits piecewise but not together', () => {
    const engine = engineWith(node('n1'));
    const outcome = engine.tryPlace(request('a/pd', [whole(4, { name: 'prefill' }), whole(6, { name: 'decode' })]));
    expect(outcome).toMatchObject({ ok: false, reason: 'NoFit' });
    if (!outcome.ok) {
      expect(outcome.message).toContain('together with the workload\'s other pod sets (all pods are placed together or none)');
    }
  });
});
