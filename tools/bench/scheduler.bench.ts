// `npm run bench -- scheduler [nodes] [workloads]`
//
// The admission chain in one process on one core, as the leader runs it: AdmissionController
// (validation, quota in credits, queue order) over the indexed PlacementEngine (device fit,
// topology, NVLink-aware choice, MIG start:size), with every admission confirmed like the
// scheduler does after its ledger write. The fleet is 10,000 nodes x 8 H100 (NVLink domain =
// node, racks of 32 nodes, 10 % of the nodes MIG-enabled); the stream is 50,000 mixed workloads
// (whole 1/2/4/8, 2x8 gangs that require one rack, slices, shared tokens, MIG partitions),
// submitted in bursts of 20 (BENCH_BURST), each followed by an admission cycle. Between bursts the oldest
// admitted workloads finish and are released, so the fleet keeps turning over.
//
// Baseline in the same run: a first-fit placer that scans every node for every request (what a
// scheduler without indexes does), on the same fleet and a 2,000-workload prefix of the stream.
// KV round trips (ledger CAS, status write) are not included: they are I/O and pipelined.
import { CapacityModel } from '@gpufleet/capacity-core';
import {
  ClusterQueue,
  MigDevice,
  NodeInventory,
  NodePhase,
  PodPlacement,
  PreemptionPolicy,
  QueueingStrategy,
  WorkloadSpec,
} from '@gpufleet/contracts';
import {
  AdmissionController,
  PlacementEngine,
  Placer,
  PlacementOutcome,
  PlacementRequest,
  QueueManager,
  ledgerConflicts,
  poolShapeFromCapacity,
} from '@gpufleet/scheduling-core';
import { node } from '@gpufleet/testing';

// Arrivals come in bursts of this many workloads (BENCH_BURST); each burst is followed by a cycle.
const BURST = Number(process.env.BENCH_BURST ?? 20);

function fleet(nodes: number): NodeInventory[] {
  const out: NodeInventory[] = [];
  for (let i = 0; i < nodes; i++) {
    const name = `n-${String(i).padStart(5, '0')}`;
    const mig = i % 10 === 9 ? Object.fromEntries(Array.from({ length: 8 }, (_, g) => [g, [] as MigDevice[]])) : undefined;
    out.push(node(name, { rack: `r-${Math.floor(i / 32)}`, zone: `z-${Math.floor(i / 2500)}`, nvlinkDomain: name, mig }));
  }
  return out;
}

function rng(seed: number): () => number {
  let s = seed;
  return () => ((s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
}

type Kind = 'whole-1' | 'whole-2' | 'whole-4' | 'whole-8' | 'gang-2x8' | 'slice' | 'shared' | 'mig';
/** Accelerator-equivalents a workload of each kind holds, for utilization. */
const EQUIVALENTS: Record<Kind, number> = { 'whole-1': 1, 'whole-2': 2, 'whole-4': 4, 'whole-8': 8, 'gang-2x8': 16, slice: 0.25, shared: 0.3, mig: 1 / 7 };

function workload(i: number, rnd: () => number): { kind: Kind; spec: WorkloadSpec } {
  const r = rnd();
  const kind: Kind = r < 0.25 ? 'whole-1' : r < 0.4 ? 'whole-2' : r < 0.5 ? 'whole-4' : r < 0.57 ? 'whole-8' : r < 0.6 ? 'gang-2x8' : r < 0.75 ? 'slice' : r < 0.85 ? 'shared' : 'mig';
  const n = { 'whole-1': 1, 'whole-2': 2, 'whole-4': 4, 'whole-8': 8, 'gang-2x8': 8 }[kind as 'whole-1'];
  const accelerator =
    kind === 'slice' ? { slice: { memoryPercent: 25, coresPercent: 25 } } : kind === 'shared' ? { sharedTokens: 3 } : kind === 'mig' ? { partitionProfile: '1g.10gb' } : { whole: n };
  return {
    kind,
    spec: WorkloadSpec.fromPartial({
      namespace: 'bench',
      name: `w-${i}`,
      localQueue: 'main',
      priority: 0,
      podSets: [
        {
          name: 'main',
          count: 1,
          size: kind === 'gang-2x8' ? 2 : 1,
          resources: { accelerator, vcpu: 4, memoryMib: 16384 },
          topology: kind === 'gang-2x8' ? { requiredLevel: 'rack', preferredLevel: '' } : { requiredLevel: '', preferredLevel: 'nvlink-domain' },
        },
      ],
    }),
  };
}

/** The baseline: first fit by scanning every node for every request, whole accelerators only. */
class ScanningPlacer implements Placer {
  private readonly free = new Map<string, number>();
  constructor(nodes: NodeInventory[]) {
    for (const n of nodes) this.free.set(n.nodeName, n.accelerators.filter((a) => !a.migEnabled).length);
  }
  tryPlace(req: PlacementRequest): PlacementOutcome {
    const want = req.podSets[0].resources?.accelerator?.whole ?? 0;
    for (const [name, free] of this.free) {
      if (free >= want) return { ok: true, placements: [PodPlacement.fromPartial({ node: name, podSet: 'main', acceleratorIds: [String(want)] })] };
    }
    return { ok: false, reason: 'NoFit', message: 'no node', largestFreeBlock: '' };
  }
  commit(_key: string, placements: PodPlacement[]): void {
    for (const p of placements) this.free.set(p.node, this.free.get(p.node)! - Number(p.acceleratorIds[0]));
  }
  release(): void {}
}

/** Mean µs per tryPlace+commit of whole-accelerator requests, until the fleet is full. */
function placementCost(placer: Placer, pool: string, specs: WorkloadSpec[]): number {
  const t0 = performance.now();
  for (const spec of specs) {
    const req: PlacementRequest = { key: `bench/${spec.name}`, pool, podSets: spec.podSets, packing: 'binpack' };
    const o = placer.tryPlace(req);
    if (o.ok) placer.commit(req.key, o.placements);
  }
  return ((performance.now() - t0) * 1000) / specs.length;
}

function pct(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : 0;
}

export async function run(args: string[]): Promise<void> {
  const nodes = Number(args[0] ?? 10_000);
  const total = Number(args[1] ?? 50_000);
  const inventories = fleet(nodes);
  const model = new CapacityModel();
  model.batch(() => {
    for (const inv of inventories) {
      model.upsertNode(inv);
      model.setPhase(inv.nodeName, NodePhase.NODE_PHASE_READY);
    }
  });
  const pool = model.listPools()[0].name;
  const engine = new PlacementEngine();
  for (const inv of inventories) engine.upsertNode(inv, true, pool);
  const accelerators = inventories.length * 8;

  const queues = new QueueManager();
  queues.putClusterQueue(
    ClusterQueue.fromPartial({
      name: 'main',
      pool,
      nominalQuota: accelerators * 1_600_000,
      queueingStrategy: QueueingStrategy.QUEUEING_STRATEGY_BEST_EFFORT_FIFO,
      withinClusterQueue: PreemptionPolicy.PREEMPTION_POLICY_NEVER,
      reclaimWithinCohort: PreemptionPolicy.PREEMPTION_POLICY_NEVER,
      fairSharingWeight: 1,
      packing: 'binpack',
    }),
    {},
  );
  queues.putLocalQueue({ namespace: 'bench', name: 'main', clusterQueue: 'main' });
  const controller = new AdmissionController({ placer: engine, queues, pools: [poolShapeFromCapacity(model, pool)!] });

  const rnd = rng(7);
  const stream = Array.from({ length: total }, (_, i) => workload(i, rnd));
  const submittedAt = new Map<string, number>();
  const kindOf = new Map<string, Kind>();
  const latencies: number[] = [];
  const waited: number[] = []; // admitted only after other workloads finished and freed devices
  const burstOf = new Map<string, number>();
  let burst = 0;
  const admittedKeys: string[] = [];
  let admitted = 0;
  let held = 0; // accelerator-equivalents admitted and not yet finished
  let demand = 0;
  let releases = 0;
  (globalThis as { gc?: () => void }).gc?.();

  const started = performance.now();
  for (let at = 0; at < total; at += BURST, burst++) {
    // Workloads finish: release a few of the oldest admitted ones per burst (steady turnover).
    for (let r = 0; r < Math.ceil(BURST / 4) && releases < admittedKeys.length; r++, releases++) {
      const key = admittedKeys[releases];
      controller.finish(key);
      held -= EQUIVALENTS[kindOf.get(key)!];
      demand -= EQUIVALENTS[kindOf.get(key)!];
    }
    for (const { kind, spec } of stream.slice(at, at + BURST)) {
      const key = `bench/${spec.name}`;
      const res = controller.submit(spec);
      if (!res.accepted) throw new Error(`rejected ${key}: ${res.message}`);
      submittedAt.set(key, performance.now());
      burstOf.set(key, burst);
      kindOf.set(key, kind);
      demand += EQUIVALENTS[kind];
    }
    for (;;) {
      const { decisions } = controller.cycle(new Date(), { maxAdmissions: 1_000 });
      let n = 0;
      for (const d of decisions) {
        if (d.kind !== 'admit') continue;
        const ok = controller.confirmAdmission(d.key, d.placements);
        if (!ok.ok) throw new Error(`confirm failed for ${d.key}: ${ok.message}`);
        const latency = performance.now() - submittedAt.get(d.key)!;
        (burstOf.get(d.key) === burst ? latencies : waited).push(latency);
        admittedKeys.push(d.key);
        held += EQUIVALENTS[kindOf.get(d.key)!];
        admitted++;
        n++;
      }
      if (n < 1_000) break;
    }
  }
  const elapsedMs = performance.now() - started;

  let doubles = 0;
  for (const inv of inventories) doubles += ledgerConflicts(engine.ledgerOf(inv.nodeName), inv).length;
  const audit = engine.auditIndexes();
  const sorted = [...latencies].sort((a, b) => a - b);
  const perSecond = admitted / (elapsedMs / 1000);
  const couldFit = Math.min(accelerators, demand);
  const utilization = held / couldFit;

  // Baseline: the same whole-accelerator requests, scanning first-fit vs the indexed engine,
  // each on a fresh, empty fleet filled until nothing more fits.
  const wholes = stream.filter((w) => w.kind.startsWith('whole')).slice(0, 40_000).map((w) => w.spec);
  const indexed = new PlacementEngine();
  for (const inv of inventories) indexed.upsertNode(inv, true, pool);
  const engineUs = placementCost(indexed, pool, wholes);
  const scanUs = placementCost(new ScanningPlacer(inventories), pool, wholes);
  const waitedSorted = [...waited].sort((a, b) => a - b);

  console.log(`fleet: ${inventories.length} nodes, ${accelerators} accelerators (${inventories.length / 10} nodes MIG-enabled), racks of 32, NVLink domain = node`);
  console.log(`stream: ${total} workloads in bursts of ${BURST}; ${releases} finished and released along the way`);
  console.log(`admitted ${admitted} in ${elapsedMs.toFixed(0)} ms: ${perSecond.toFixed(0)} admissions/s on one core`);
  console.log(
    `submit-to-admitted latency of the ${sorted.length} workloads that fit when submitted: p50 ${pct(sorted, 0.5).toFixed(2)} ms, ` +
      `p90 ${pct(sorted, 0.9).toFixed(2)} ms, p99 ${pct(sorted, 0.99).toFixed(2)} ms, max ${pct(sorted, 1).toFixed(1)} ms`,
  );
  console.log(
    `${waitedSorted.length} more waited for others to finish first (p50 ${pct(waitedSorted, 0.5).toFixed(1)} ms, p99 ${pct(waitedSorted, 0.99).toFixed(1)} ms: time spent waiting for devices, not scheduling)`,
  );
  console.log(`held at the end: ${held.toFixed(0)} accelerator-equivalents; demand still wanting devices that could fit: ${couldFit.toFixed(0)}`);
  console.log(`ledger conflicts: ${doubles}; index audit: ${audit.length === 0 ? 'clean' : audit.slice(0, 3).join('; ')}`);
  console.log(
    `placement of ${wholes.length} whole-accelerator requests filling an empty fleet: indexed engine ${engineUs.toFixed(1)} µs, ` +
      `first-fit scan baseline ${scanUs.toFixed(1)} µs per request (${(scanUs / engineUs).toFixed(1)}x faster)`,
  );
  console.log(`admissions_per_second: ${perSecond.toFixed(0)}`);
  console.log(`p50_admit_ms: ${pct(sorted, 0.5).toFixed(2)}`);
  console.log(`p99_admit_ms: ${pct(sorted, 0.99).toFixed(2)}`);
  console.log(`utilization: ${utilization.toFixed(3)}`);
  console.log(`double_allocations: ${doubles}`);
}
