// The kubelet assigned other devices than the ledger says (kubernetes runtime): the admitted
// workloads take the kubelet's devices, over the real PlacementEngine.
import type { PodPlacement } from '@gpufleet/contracts';
import { node, podPlacement, request, where, whole } from '../placement/__fixtures__/fleet';
import { PlacementEngine } from '../placement/placement-engine';
import { QueueManager } from '../queues/queue-manager';
import { AdmissionController } from './admission-controller';
import { clusterQueue, h100Pool, wholeWorkload } from './__fixtures__/workloads';

function setUp(...names: string[]): { engine: PlacementEngine; controller: AdmissionController } {
  const engine = new PlacementEngine();
  engine.upsertNode(node('n1', { gpus: 4 }), true, 'h100');
  const queues = new QueueManager({ poolExists: (p) => p === 'h100' });
  queues.putClusterQueue(clusterQueue('cq'));
  queues.putLocalQueue({ namespace: 'team-a', name: 'main', clusterQueue: 'cq' });
  const controller = new AdmissionController({ placer: engine, queues, pools: [h100Pool('h100', 1, { accelerators: 4 })] });
  for (const name of names) {
    const submitted = controller.submit(wholeWorkload(name));
    if (!submitted.accepted) throw new Error(submitted.message);
  }
  for (const d of controller.cycle().decisions) if (d.kind === 'admit') controller.confirmAdmission(d.key, d.placements);
  return { engine, controller };
}

const on = (placements: readonly PodPlacement[] | undefined, ...ids: string[]): PodPlacement[] => (placements ?? []).map((p) => ({ ...p, acceleratorIds: ids }));

describe('AdmissionController.correctPlacements', () => {
  it("moves a workload to the card the kubelet gave it: its old card is free again, the new one taken, its status says so", () => {
    const { engine, controller } = setUp('a');
    expect(where(engine.placementsOf('team-a/a'))).toEqual(['n1:nvidia-0']);
    const result = controller.correctPlacements(new Map([['team-a/a', on(engine.placementsOf('team-a/a'), 'nvidia-3')]]));
    expect(result.ok).toBe(true);
    expect(result.ok && result.workloads[0].status?.placements.map((p) => p.acceleratorIds)).toEqual([['nvidia-3']]);
    expect(where(engine.placementsOf('team-a/a'))).toEqual(['n1:nvidia-3']);
    expect(where(controller.getWorkload('team-a/a')?.status?.placements ?? [])).toEqual(['n1:nvidia-3']);
    // Three cards left, nvidia-3 not among them.
    expect(engine.tryPlace(request('x/four', [whole(4)]))).toMatchObject({ ok: false });
    const three = engine.tryPlace(request('x/three', [whole(3)]));
    expect(three.ok && where(three.placements)).toEqual(['n1:nvidia-0,nvidia-1,nvidia-2']);
  });

  it('swaps two workloads whose cards the kubelet gave the other way round', () => {
    const { engine, controller } = setUp('a', 'b');
    const a = engine.placementsOf('team-a/a');
    const b = engine.placementsOf('team-a/b');
    const result = controller.correctPlacements(new Map([
      ['team-a/a', on(a, ...b[0].acceleratorIds)],
      ['team-a/b', on(b, ...a[0].acceleratorIds)],
    ]));
    expect(result.ok).toBe(true);
    expect(engine.placementsOf('team-a/a')[0].acceleratorIds).toEqual(b[0].acceleratorIds);
    expect(engine.placementsOf('team-a/b')[0].acceleratorIds).toEqual(a[0].acceleratorIds);
  });

  it('changes nothing when the new card is held by a workload outside the correction, and says which', () => {
    const { engine, controller } = setUp('a', 'b');
    const a = engine.placementsOf('team-a/a');
    const held = engine.placementsOf('team-a/b')[0].acceleratorIds;
    const result = controller.correctPlacements(new Map([['team-a/a', on(a, ...held)]]));
    expect(result.ok).toBe(false);
    expect(!result.ok && result.message).toContain(held[0]);
    expect(engine.placementsOf('team-a/a')).toEqual(a);
  });

  it('refuses a workload that is not admitted, or pods it does not hold', () => {
    const { engine, controller } = setUp('a');
    expect(controller.correctPlacements(new Map([['team-a/none', []]]))).toEqual({ ok: false, message: 'workload team-a/none is not admitted (unknown)' });
    const a = engine.placementsOf('team-a/a');
    expect(controller.correctPlacements(new Map([['team-a/a', [...a, { ...a[0], replica: 1 }]]]))).toEqual({ ok: false, message: 'the corrected placements of team-a/a name other pods than it holds' });
  });
});

describe('PlacementEngine: withheld accelerators', () => {
  it('offers a withheld card for nothing, and keeps a ledger hold on it counted', () => {
    const engine = new PlacementEngine();
    engine.upsertNode(node('n1', { gpus: 4 }), true, 'h100', 'shared', new Set(['nvidia-1']));
    const three = engine.tryPlace(request('x/three', [whole(3)]));
    expect(three.ok && where(three.placements)).toEqual(['n1:nvidia-0,nvidia-2,nvidia-3']);
    expect(engine.tryPlace(request('x/four', [whole(4)]))).toMatchObject({ ok: false, reason: 'NoFit' });
    // Re-derived from a ledger that holds the card (a leader takeover): still withheld, and the hold stays once it is not.
    engine.loadLedger([{ node: 'n1', entries: [{ workload: 'y/held', pod: podPlacement('n1', { ids: ['nvidia-1'] }) }] }]);
    expect(engine.tryPlace(request('x/four', [whole(4)]))).toMatchObject({ ok: false, reason: 'NoFit' });
    engine.upsertNode(node('n1', { gpus: 4 }), true, 'h100', 'shared');
    expect(engine.tryPlace(request('x/four', [whole(4)]))).toMatchObject({ ok: false, reason: 'NoFit' });
    engine.release('y/held');
    expect(engine.tryPlace(request('x/four', [whole(4)])).ok).toBe(true);
  });
});
