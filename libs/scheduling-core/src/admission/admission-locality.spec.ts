import { PlacementEngine } from '../placement/placement-engine';
import { engineWith, node } from '../placement/__fixtures__/fleet';
import { QueueManager } from '../queues';
import { AdmissionController } from './admission-controller';
import { clusterQueue, h100Pool, wholeWorkload } from './__fixtures__/workloads';

// Weight locality through admission, over the real placement engine: the controller asks which
// nodes a workload prefers (where its model weights are cached) and the engine tries them first.
function controllerOn(engine: PlacementEngine, preferredNodes: (name: string) => string[]): AdmissionController {
  const queues = new QueueManager({ poolExists: (p) => p === 'h100' });
  queues.putClusterQueue(clusterQueue('cq'));
  queues.putLocalQueue({ namespace: 'team-a', name: 'main', clusterQueue: 'cq' });
  return new AdmissionController({ placer: engine, queues, pools: [h100Pool('h100', 2)], preferredNodes: (spec) => preferredNodes(spec.name) });
}

function admitted(controller: AdmissionController): Record<string, string> {
  const out: Record<string, string> = {};
  for (const d of controller.cycle().decisions) {
    if (d.kind !== 'admit') continue;
    const confirmed = controller.confirmAdmission(d.key, d.placements);
    if (!confirmed.ok) throw new Error(confirmed.message);
    out[d.key] = d.placements.map((p) => p.node).join(',');
  }
  return out;
}

describe('AdmissionController: weight locality', () => {
  it('admits a replica onto the node holding its weights, where bin-packing would have put it elsewhere', () => {
    const engine = engineWith(node('n1'), node('n2'));
    const controller = controllerOn(engine, (name) => (name === 'local' ? ['n2'] : []));
    controller.submit(wholeWorkload('big', { whole: 6 }));
    const first = admitted(controller)['team-a/big']!;
    const other = first === 'n1' ? 'n2' : 'n1';
    controller.submit(wholeWorkload('packed', { whole: 1 }));
    expect(admitted(controller)['team-a/packed']).toBe(first);
    const local = controllerOn(engineWith(node('n1'), node('n2')), (name) => (name === 'local' ? [other] : []));
    local.submit(wholeWorkload('big', { whole: 6 }));
    expect(admitted(local)['team-a/big']).toBe(first);
    local.submit(wholeWorkload('local', { whole: 1 }));
    expect(admitted(local)['team-a/local']).toBe(other);
  });
});
