import { admit, engineWith, node, request, where, whole } from './__fixtures__/fleet';

// Weight locality: a replica whose model weights a node's cache already holds is placed there
// when it fits, ahead of bin-packing; never where it does not fit, never outside its pool.
describe('PlacementEngine: preferred nodes (weight locality)', () => {
  it('places a replica on the node that holds its weights, although bin-packing would pick another', () => {
    const engine = engineWith(node('n1'), node('n2'), node('n3'));
    admit(engine, request('a/six', [whole(6)])); // n1 is now the fullest: bin-packing's choice for a pair
    const packed = engine.tryPlace(request('b/pair', [whole(2)]));
    expect(packed.ok && where(packed.placements)[0]).toMatch(/^n1:/);
    const local = engine.tryPlace({ ...request('b/pair', [whole(2)]), preferredNodes: ['n3'] });
    expect(local.ok && where(local.placements)).toEqual(['n3:nvidia-0,nvidia-1']);
  });

  it('falls back to the usual choice when no preferred node fits, is Ready or is in the pool', () => {
    const engine = engineWith(node('n1'), node('n2'));
    admit(engine, request('a/eight', [whole(8)])); // n1 or n2 is full
    const full = where(admit(engine, request('a/probe', [whole(8)])))[0]!.split(':')[0]!; // and now the other one
    engine.release('a/probe');
    const outcome = engine.tryPlace({ ...request('b/four', [whole(4)]), preferredNodes: [full === 'n1' ? 'n2' : 'n1', 'nowhere'] });
    expect(outcome.ok && where(outcome.placements)[0]).toMatch(new RegExp(`^${full}:`));
    expect(engine.tryPlace({ ...request('b/four', [whole(4)]), preferredNodes: ['nowhere'] }).ok).toBe(true);
  });

  it('prefers for every replica of the request, then places the ones that do not fit there as usual', () => {
    const engine = engineWith(node('n1'), node('n2'));
    const [six] = admit(engine, request('a/six', [whole(6)])); // 2 accelerators left beside it
    const other = six.node === 'n1' ? 'n2' : 'n1';
    const outcome = engine.tryPlace({ ...request('b/three', [whole(1, { count: 3 })]), preferredNodes: [six.node] });
    expect(outcome.ok && outcome.placements.map((p) => p.node)).toEqual([six.node, six.node, other]);
  });
});
