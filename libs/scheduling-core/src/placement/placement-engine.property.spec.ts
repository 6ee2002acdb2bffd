/**
 * Property tests over random small fleets (HGX boards, PCIe boxes, MIG GPUs with existing
 * partitions, racks and zones, some labels missing) and random streams of admissions,
 * releases, readiness flips and ledger reloads. After every step: nothing is allocated twice
 * (checked from the ledger alone), the incremental indexes match a rebuild, and admitted
 * replicas with a required level sit in one domain; a failed tryPlace changes nothing, and
 * releasing a workload gives back exactly what it held.
 */
import fc from 'fast-check';
import { LinkType, NodeInventory, PodSet } from '@gpufleet/contracts';
import { ledgerConflicts } from '../ledger';
import type { Packing } from '../placer';
import { PlacementEngine } from './placement-engine';
import { A100, hostOnly, link, migDevice, node, partition, request, shared, slice, whole } from './__fixtures__/fleet';

const POOL = 'mixed';
const LEVELS = ['', 'node', 'nvlink-domain', 'rack', 'zone'];
const PROFILES = ['1g.10gb', '1g.10gb+me', '1g.20gb', '2g.20gb', '3g.40gb', '4g.40gb', '7g.80gb'];
const MIG_LAYOUTS = [
  [],
  [migDevice('3g.40gb', 0, 4)],
  [migDevice('3g.40gb', 0, 4), migDevice('3g.40gb', 4, 4)],
  [migDevice('1g.10gb', 0, 1), migDevice('2g.20gb', 2, 2)],
  [migDevice('4g.40gb', 0, 4)],
  [migDevice('7g.80gb', 0, 8)],
  [migDevice('1g.10gb+me', 6, 1)],
];

interface NodeSpec {
  kind: 'hgx' | 'pcie' | 'mig';
  gpus: number;
  rack: string;
  zone: string;
  nvlinkDomain: string;
  logicalCpus: number;
  migLayouts: number[];
}

const nodeSpec: fc.Arbitrary<NodeSpec> = fc.record({
  kind: fc.constantFrom('hgx' as const, 'pcie' as const, 'mig' as const),
  gpus: fc.constantFrom(2, 4, 8),
  rack: fc.constantFrom('r1', 'r2', ''),
  zone: fc.constantFrom('z1', 'z2', ''),
  nvlinkDomain: fc.constantFrom('nvl-1', 'nvl-2', '', 'own'),
  logicalCpus: fc.constantFrom(16, 64, 224),
  // Per GPU of a MIG node: -1 = MIG disabled, else a layout of existing partitions.
  migLayouts: fc.array(fc.integer({ min: -1, max: MIG_LAYOUTS.length - 1 }), { minLength: 8, maxLength: 8 }),
});

function inventoryOf(spec: NodeSpec, index: number): NodeInventory {
  const name = `n${index}`;
  const base = {
    gpus: spec.gpus,
    rack: spec.rack,
    zone: spec.zone,
    nvlinkDomain: spec.nvlinkDomain === 'own' ? `${name}-hgx` : spec.nvlinkDomain,
    logicalCpus: spec.logicalCpus,
    nodeMemoryMib: 512 * 1024,
  };
  if (spec.kind === 'mig') {
    const mig: Record<number, ReturnType<typeof migDevice>[]> = {};
    for (let g = 0; g < spec.gpus; g++) if (spec.migLayouts[g] >= 0) mig[g] = MIG_LAYOUTS[spec.migLayouts[g]];
    return node(name, { ...base, product: A100, mig });
  }
  if (spec.kind === 'pcie') {
    const links = [];
    for (let a = 0; a < spec.gpus; a++) {
      for (let b = a + 1; b < spec.gpus; b++) {
        links.push(b === a + 1 && a % 2 === 0 ? link(a, b, LinkType.LINK_TYPE_NVLINK, 4) : link(a, b, LinkType.LINK_TYPE_SYS));
      }
    }
    return node(name, { ...base, links });
  }
  return node(name, base);
}

const podSetArb = (name: string): fc.Arbitrary<PodSet> =>
  fc
    .record({
      kind: fc.constantFrom('whole', 'whole', 'shared', 'slice', 'partition', 'host'),
      n: fc.constantFrom(1, 1, 2, 2, 3, 4, 8),
      tokens: fc.integer({ min: 1, max: 10 }),
      memoryPercent: fc.option(fc.integer({ min: 5, max: 70 }), { nil: undefined }),
      memoryMib: fc.integer({ min: 1_000, max: 50_000 }),
      cores: fc.integer({ min: 5, max: 70 }),
      profile: fc.constantFrom(...PROFILES),
      count: fc.integer({ min: 1, max: 3 }),
      size: fc.integer({ min: 1, max: 3 }),
      required: fc.constantFrom(...LEVELS),
      preferred: fc.constantFrom(...LEVELS),
      vcpu: fc.constantFrom(0, 2, 8, 32),
      memory: fc.constantFrom(0, 4096, 65_536),
    })
    .map((r) => {
      const o = { name, count: r.count, size: r.size, required: r.required, preferred: r.preferred, vcpu: r.vcpu, memoryMib: r.memory };
      switch (r.kind) {
        case 'whole':
          return whole(r.n, o);
        case 'shared':
          return shared(r.tokens, o);
        case 'slice':
          return slice(r.memoryPercent === undefined ? { memoryMib: r.memoryMib, coresPercent: r.cores } : { memoryPercent: r.memoryPercent, coresPercent: r.cores }, o);
        case 'partition':
          return partition(r.profile, o);
        default:
          return hostOnly({ ...o, vcpu: Math.max(1, r.vcpu) });
      }
    });

type Step =
  | { op: 'place'; podSets: PodSet[]; packing: Packing; releaseAtOnce: boolean }
  | { op: 'release'; pick: number }
  | { op: 'ready'; node: number; ready: boolean }
  | { op: 'reload' };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constant('place' as const), podSets: fc.oneof(fc.tuple(podSetArb('a')), fc.tuple(podSetArb('a'), podSetArb('b'))), packing: fc.constantFrom<Packing>('binpack', 'spread'), releaseAtOnce: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('release' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('ready' as const), node: fc.nat(), ready: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('reload' as const) }) },
);

/** A node's domain at a level, read straight from its inventory (empty label: its own). */
function domainOf(inventory: NodeInventory, level: string): string {
  const t = inventory.topology;
  const value = level === 'node' ? inventory.nodeName : level === 'nvlink-domain' ? t?.nvlinkDomain : level === 'rack' ? t?.rack : t?.zone;
  return value ? value : `own:${inventory.nodeName}`;
}

describe('PlacementEngine properties', () => {
  it('random fleets and request streams never double-allocate, honour required topology, and leave no trace on failure', () => {
    fc.assert(
      fc.property(fc.array(nodeSpec, { minLength: 1, maxLength: 6 }), fc.array(stepArb, { minLength: 1, maxLength: 40, size: 'max' }), (specs, steps) => {
        const inventories = specs.map(inventoryOf);
        const byName = new Map(inventories.map((i) => [i.nodeName, i]));
        const ready = new Map(inventories.map((i) => [i.nodeName, true]));
        const engine = new PlacementEngine();
        for (const inventory of inventories) engine.upsertNode(inventory, true, POOL);
        const live: string[] = [];
        const snapshot = (): string => JSON.stringify(inventories.map((i) => engine.ledgerOf(i.nodeName)));
        const allocations = (): string => JSON.stringify(inventories.map((i) => engine.allocationsOf(i.nodeName)));

        steps.forEach((step, i) => {
          if (step.op === 'place') {
            const key = `ns/w${i}`;
            const before = snapshot();
            const beforeAllocations = allocations();
            const outcome = engine.tryPlace(request(key, step.podSets, step.packing, POOL));
            expect(snapshot()).toBe(before);
            if (!outcome.ok) {
              expect(['NoFit', 'TopologyUnsatisfiable', 'PoolUnavailable']).toContain(outcome.reason);
              expect(outcome.message.length).toBeGreaterThan(0);
              expect(engine.auditIndexes()).toEqual([]);
            } else {
              const expectedPods = step.podSets.reduce((sum, ps) => sum + ps.count * Math.max(1, ps.size), 0);
              expect(outcome.placements).toHaveLength(expectedPods);
              for (const p of outcome.placements) expect(ready.get(p.node)).toBe(true);
              for (const ps of step.podSets) {
                if (!ps.topology?.requiredLevel) continue;
                for (let r = 0; r < ps.count; r++) {
                  const domains = new Set(
                    outcome.placements.filter((p) => p.podSet === ps.name && p.replica === r).map((p) => domainOf(byName.get(p.node) as NodeInventory, ps.topology?.requiredLevel ?? '')),
                  );
                  expect(domains.size).toBe(1);
                }
              }
              engine.commit(key, outcome.placements);
              if (step.releaseAtOnce) {
                engine.release(key);
                expect(allocations()).toBe(beforeAllocations);
              } else {
                live.push(key);
              }
            }
          } else if (step.op === 'release' && live.length > 0) {
            const [key] = live.splice(step.pick % live.length, 1);
            const touched = engine.nodesTouchedBy(key);
            engine.release(key);
            expect(engine.nodesTouchedBy(key)).toEqual([]);
            for (const n of touched) expect(engine.ledgerOf(n).entries.some((e) => e.workload === key)).toBe(false);
          } else if (step.op === 'ready') {
            const inventory = inventories[step.node % inventories.length];
            ready.set(inventory.nodeName, step.ready);
            engine.upsertNode(inventory, step.ready, POOL);
          } else if (step.op === 'reload') {
            const before = allocations();
            expect(engine.loadLedger(inventories.map((inv) => engine.ledgerOf(inv.nodeName)))).toEqual([]);
            expect(allocations()).toBe(before);
          }
          for (const inventory of inventories) expect(ledgerConflicts(engine.ledgerOf(inventory.nodeName), inventory)).toEqual([]);
          expect(engine.auditIndexes()).toEqual([]);
        });

        // Releasing everything gives the whole fleet back.
        for (const key of live) engine.release(key);
        for (const inventory of inventories) expect(engine.ledgerOf(inventory.nodeName).entries).toEqual([]);
        expect(engine.auditIndexes()).toEqual([]);
      }),
      { numRuns: 150 },
    );
  });

  it('feasibility of a single pod does not depend on history: an engine rebuilt from the ledger agrees', () => {
    fc.assert(
      fc.property(
        fc.array(nodeSpec, { minLength: 1, maxLength: 5 }),
        fc.array(fc.tuple(podSetArb('a'), fc.boolean()), { minLength: 1, maxLength: 25, size: 'max' }),
        fc.array(podSetArb('probe'), { minLength: 1, maxLength: 8 }),
        (specs, admissions, probes) => {
          const inventories = specs.map(inventoryOf);
          const engine = new PlacementEngine();
          for (const inventory of inventories) engine.upsertNode(inventory, true, POOL);
          admissions.forEach(([podSet, keep], i) => {
            const outcome = engine.tryPlace(request(`ns/w${i}`, [podSet], 'binpack', POOL));
            if (!outcome.ok) return;
            engine.commit(`ns/w${i}`, outcome.placements);
            if (!keep) engine.release(`ns/w${i - 1}`);
          });
          const rebuilt = new PlacementEngine();
          for (const inventory of inventories) rebuilt.upsertNode(inventory, true, POOL);
          rebuilt.loadLedger(inventories.map((inv) => engine.ledgerOf(inv.nodeName)));
          for (const probe of probes) {
            // One pod, no topology: whether it fits is a property of the free devices alone.
            const single: PodSet = { ...probe, count: 1, size: 1, topology: undefined };
            expect(rebuilt.tryPlace(request('p/x', [single], 'binpack', POOL)).ok).toBe(engine.tryPlace(request('p/x', [single], 'binpack', POOL)).ok);
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
