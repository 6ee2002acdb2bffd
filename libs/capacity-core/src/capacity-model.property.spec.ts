// The incremental model must always agree with a model derived from scratch from the same
// node records, whatever sequence of updates led there; and its events must replay to its state.
import fc from 'fast-check';
import { InstanceType, NodeInventory, NodePhase, WatchEventType } from '@gpufleet/contracts';
import { A100_80GB, cpuNodeInventory, L40S, migDevice, nodeInventory } from './__fixtures__/inventories';
import { AcceleratorAllocation, NodeAllocations } from './allocations';
import { CapacityModel } from './capacity-model';

const NODE_NAMES = ['n0', 'n1', 'n2', 'n3', 'n4', 'n5'];

const templates: ((name: string) => NodeInventory)[] = [
  (name) => nodeInventory(name),
  (name) => nodeInventory(name, { gpus: 4, logicalCpus: 96, gpuOverrides: { 1: { migEnabled: true } } }),
  (name) => nodeInventory(name, { gpu: A100_80GB, gpuOverrides: { 0: { migEnabled: true }, 5: { migEnabled: true, migDevices: [migDevice('3g.40gb', 0, 4)] } } }),
  (name) => nodeInventory(name, { gpus: 2, gpu: L40S }),
  (name) => cpuNodeInventory(name),
  (name) => cpuNodeInventory(name, { logicalCpus: 48, memoryMib: 200_000 }),
];

const acceleratorAllocation: fc.Arbitrary<AcceleratorAllocation> = fc.oneof(
  fc.constant({ mode: 'whole' as const }),
  fc.integer({ min: 0, max: 10 }).map((tokens) => ({ mode: 'shared' as const, tokens })),
  fc
    .array(fc.record({ memoryMib: fc.integer({ min: 0, max: 50_000 }), coresPercent: fc.integer({ min: 0, max: 60 }) }), { maxLength: 3 })
    .map((slices) => ({ mode: 'sliced' as const, slices })),
);

const allocations: fc.Arbitrary<NodeAllocations> = fc.record(
  {
    accelerators: fc.dictionary(fc.constantFrom(...Array.from({ length: 8 }, (_, i) => `nvidia-${i}`)), acceleratorAllocation, { maxKeys: 4 }),
    migPartitions: fc.array(
      fc.record({
        acceleratorId: fc.constantFrom('nvidia-0', 'nvidia-1', 'nvidia-5'),
        profile: fc.constantFrom('1g.10gb', '1g.10gb+me', '1g.20gb', '2g.20gb', '3g.40gb', '4g.40gb', '7g.80gb'),
        start: fc.integer({ min: 0, max: 6 }),
      }),
      { maxLength: 3 },
    ),
    vcpu: fc.integer({ min: 0, max: 300 }),
    memoryMib: fc.integer({ min: 0, max: 2_500_000 }),
  },
  { requiredKeys: [] },
);

type Op =
  | { kind: 'upsert'; node: string; template: number }
  | { kind: 'phase'; node: string; ready: boolean }
  | { kind: 'remove'; node: string }
  | { kind: 'allocate'; node: string; allocations: NodeAllocations };

const node = fc.constantFrom(...NODE_NAMES);
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('upsert' as const), node, template: fc.integer({ min: 0, max: templates.length - 1 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('phase' as const), node, ready: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), node }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('allocate' as const), node, allocations }) },
);

const withoutRevision = (types: InstanceType[]) => types.map((t) => ({ ...t, revision: 0 }));

describe('CapacityModel incremental updates', () => {
  it('agree with a derivation from scratch and replay from their events, for any sequence of updates', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const model = new CapacityModel();
        const mirror = new Map<string, InstanceType>();
        // The final node records, to derive from scratch.
        const inventories = new Map<string, NodeInventory>();
        const phases = new Map<string, NodePhase>();
        const allocated = new Map<string, NodeAllocations>();

        for (const o of ops) {
          let events;
          switch (o.kind) {
            case 'upsert': {
              const inventory = templates[o.template](o.node);
              inventories.set(o.node, inventory);
              events = model.upsertNode(inventory);
              break;
            }
            case 'phase': {
              const phase = o.ready ? NodePhase.NODE_PHASE_READY : NodePhase.NODE_PHASE_NOT_READY;
              phases.set(o.node, phase);
              events = model.setPhase(o.node, phase);
              break;
            }
            case 'remove':
              inventories.delete(o.node);
              phases.delete(o.node);
              allocated.delete(o.node);
              events = model.removeNode(o.node);
              break;
            case 'allocate':
              allocated.set(o.node, o.allocations);
              events = model.setAllocations(o.node, o.allocations);
              break;
          }
          for (const e of events) {
            if (e.type === WatchEventType.WATCH_EVENT_TYPE_DELETED) mirror.delete(e.instanceType.name);
            else mirror.set(e.instanceType.name, e.instanceType);
          }
        }

        const fresh = new CapacityModel();
        fresh.batch(() => {
          for (const [name, a] of allocated) fresh.setAllocations(name, a);
          for (const [name, phase] of phases) fresh.setPhase(name, phase);
          for (const inventory of inventories.values()) fresh.upsertNode(inventory);
        });

        const types = model.listInstanceTypes();
        expect(withoutRevision(types)).toEqual(withoutRevision(fresh.listInstanceTypes()));
        expect(model.listPools()).toEqual(fresh.listPools());
        expect([...mirror.values()].sort((a, b) => (a.name < b.name ? -1 : 1))).toEqual(
          [...types].sort((a, b) => (a.name < b.name ? -1 : 1)),
        );
      }),
      { numRuns: 300 },
    );
  });
});
