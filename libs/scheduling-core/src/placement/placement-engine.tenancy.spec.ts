import { PlacementEngine } from './placement-engine';
import { admit, node, podPlacement, POOL, request, shared, where, whole } from './__fixtures__/fleet';

/** n1 exclusive (its runtime cannot sandbox), n2 shared. */
function engine(): PlacementEngine {
  const e = new PlacementEngine();
  e.upsertNode(node('n1'), true, POOL, 'exclusive');
  e.upsertNode(node('n2'), true, POOL, 'shared');
  return e;
}

describe('PlacementEngine: nodes that take one namespace at a time', () => {
  it('gives a second namespace the shared node, and the same namespace the exclusive one', () => {
    const e = engine();
    const [first] = admit(e, request('team-a/one', [whole(6)]));
    expect(first.node).toBe('n1'); // bin-packing prefers either; make the exclusive one busy
    expect(where(admit(e, request('team-b/two', [whole(2)])))[0]).toMatch(/^n2:/);
    // team-a may still fill n1.
    expect(where(admit(e, request('team-a/three', [whole(2)])))[0]).toMatch(/^n1:/);
  });

  it('refuses with a message naming the node, its tenants and the way out', () => {
    const e = new PlacementEngine();
    e.upsertNode(node('n1'), true, POOL, 'exclusive');
    admit(e, request('team-a/one', [whole(1)]));
    const outcome = e.tryPlace(request('team-b/two', [whole(1)]));
    expect(outcome).toMatchObject({ ok: false, reason: 'NoFit' });
    expect(!outcome.ok && outcome.message).toBe(
      "pool h100 has no Ready node that takes namespace team-b's pods now; 1 node runs pods unconfined (no sandbox) and holds another namespace's pods, " +
        "so it takes none of namespace team-b's: n1 (team-a); sandbox its pods, or let namespaces share it with SANDBOX_ALLOW_SHARING=true on the node runtime",
    );
    // The node is back in the index afterwards: its own namespace still fits.
    expect(where(admit(e, request('team-a/more', [whole(7)])))).toHaveLength(1);
  });

  it('takes another namespace once the last tenant released the node', () => {
    const e = new PlacementEngine();
    e.upsertNode(node('n1'), true, POOL, 'exclusive');
    admit(e, request('team-a/one', [shared(2)]));
    expect(e.tryPlace(request('team-b/two', [shared(2)])).ok).toBe(false);
    e.release('team-a/one');
    expect(where(admit(e, request('team-b/two', [shared(2)])))[0]).toMatch(/^n1:/);
  });

  it('commit refuses a stale placement that would mix namespaces on an exclusive node', () => {
    const e = new PlacementEngine();
    e.upsertNode(node('n1'), true, POOL, 'exclusive');
    const outcome = e.tryPlace(request('team-b/two', [whole(1)]));
    if (!outcome.ok) throw new Error(outcome.message);
    admit(e, request('team-a/one', [whole(1)]));
    expect(() => e.commit('team-b/two', outcome.placements)).toThrow(
      'FAILED_PRECONDITION: commit of team-b/two: team-b/two pod main/0/0: node n1 runs pods unconfined and holds pods of namespace team-a: it takes one namespace at a time',
    );
  });

  it('keeps the tenancy across a ledger reload, and a shared upsert lifts it', () => {
    const e = engine();
    e.loadLedger([{ node: 'n1', entries: [{ workload: 'team-a/one', pod: podPlacement('n1', { ids: ['nvidia-0'] }) }] }]);
    expect(e.tenancyOf('n1')).toBe('exclusive');
    e.upsertNode(node('n2'), false, POOL); // n2 NotReady: only n1 is left
    expect(e.tryPlace(request('team-b/x', [whole(1)])).ok).toBe(false);
    e.upsertNode(node('n1'), true, POOL, 'shared');
    expect(where(admit(e, request('team-b/x', [whole(1)])))[0]).toMatch(/^n1:/);
    expect(e.auditIndexes()).toEqual([]);
  });

  it('leaves the indexes sound after fencing', () => {
    const e = engine();
    admit(e, request('team-a/one', [whole(3)]));
    for (let i = 0; i < 5; i++) e.tryPlace(request(`team-b/w${i}`, [whole(1 + i)]));
    expect(e.auditIndexes()).toEqual([]);
  });
});
