// Capacity model benchmark: derive pools and InstanceTypes for a simulated 10,000-node fleet
// (80,000 GPUs), then measure single inventory updates and phase changes against a baseline
// that re-derives everything per update.
//
//   npm run bench -- capacity [--nodes 10000] [--updates 20000] [--baseline-updates 3]
//
// Ends with the headline figures: derive_all_ms (median from-scratch derivation),
// update_us (mean per update, the slower of inventory updates and phase changes), rss_mib.
import {
  Accelerator,
  AcceleratorVendor,
  DeviceLink,
  LinkType,
  Nic,
  NodeInventory,
  NodePhase,
} from '@gpufleet/contracts';
import { AcceleratorAllocation, CapacityModel, NodeAllocations } from '@gpufleet/capacity-core';
import { random } from './support/random';
import { positiveIntOptions } from './support/options';

interface Options {
  nodes: number;
  updates: number;
  baselineUpdates: number;
  deriveRuns: number;
}

function parseOptions(args: string[]): Options {
  return positiveIntOptions(args, { nodes: 10_000, updates: 20_000, baselineUpdates: 3, deriveRuns: 5 });
}

// ---- simulated fleet ---------------------------------------------------------------------

interface NodeKind {
  prefix: string;
  share: number;
  gpus: number;
  product: string;
  family: string;
  memoryMib: number;
  computeCapability: string;
  cpuVendor: string;
  cpuModel: string;
  logicalCpus: number;
  sockets: number;
  memoryTotalMib: number;
  localStorageGib: number;
  nics: number;
  nodesPerRack: number;
  /** GPUs per node with MIG enabled, and the partitions the admin created on them. */
  migGpus: number;
  migLayout: { profile: string; start: number; size: number }[];
}

const INTEL_8480 = { cpuVendor: 'GenuineIntel', cpuModel: 'Intel(R) Xeon(R) Platinum 8480+', logicalCpus: 224, sockets: 2 };
const EPYC_9654 = { cpuVendor: 'AuthenticAMD', cpuModel: 'AMD EPYC 9654 96-Core Processor', logicalCpus: 384, sockets: 2 };
const EPYC_9354 = { cpuVendor: 'AuthenticAMD', cpuModel: 'AMD EPYC 9354 32-Core Processor', logicalCpus: 128, sockets: 2 };

const KINDS: NodeKind[] = [
  {
    prefix: 'hgx-h100', share: 0.78, gpus: 8, product: 'NVIDIA H100 80GB HBM3', family: 'hopper', memoryMib: 81_559,
    computeCapability: '9.0', ...INTEL_8480, memoryTotalMib: 2_063_731, localStorageGib: 30_720, nics: 8, nodesPerRack: 4,
    migGpus: 0, migLayout: [],
  },
  {
    prefix: 'hgx-h100-amd', share: 0.1, gpus: 8, product: 'NVIDIA H100 80GB HBM3', family: 'hopper', memoryMib: 81_559,
    computeCapability: '9.0', ...EPYC_9654, memoryTotalMib: 2_321_000, localStorageGib: 30_720, nics: 8, nodesPerRack: 4,
    migGpus: 0, migLayout: [],
  },
  {
    prefix: 'l40s', share: 0.06, gpus: 8, product: 'NVIDIA L40S', family: 'ada-lovelace', memoryMib: 46_068,
    computeCapability: '8.9', ...EPYC_9354, memoryTotalMib: 1_031_000, localStorageGib: 7_680, nics: 2, nodesPerRack: 8,
    migGpus: 0, migLayout: [],
  },
  {
    prefix: 'dgx-a100', share: 0.05, gpus: 8, product: 'NVIDIA A100-SXM4-80GB', family: 'ampere', memoryMib: 81_920,
    computeCapability: '8.0', cpuVendor: 'AuthenticAMD', cpuModel: 'AMD EPYC 7742 64-Core Processor', logicalCpus: 256,
    sockets: 2, memoryTotalMib: 2_063_000, localStorageGib: 15_360, nics: 8, nodesPerRack: 4,
    migGpus: 4, migLayout: [{ profile: '3g.40gb', start: 4, size: 4 }, { profile: '1g.10gb', start: 0, size: 1 }],
  },
  {
    prefix: 'cpu', share: 0.01, gpus: 0, product: '', family: '', memoryMib: 0, computeCapability: '',
    ...EPYC_9654, memoryTotalMib: 786_432, localStorageGib: 3_840, nics: 1, nodesPerRack: 16, migGpus: 0, migLayout: [],
  },
];

function gpuLinks(gpus: number, nics: number): DeviceLink[] {
  const links: DeviceLink[] = [];
  for (let a = 0; a < gpus; a++) {
    for (let b = a + 1; b < gpus; b++) {
      links.push({ a: `nvidia-${a}`, b: `nvidia-${b}`, type: LinkType.LINK_TYPE_NVLINK, nvlinks: 18 });
    }
    if (a < nics) links.push({ a: `nvidia-${a}`, b: `mlx5_${a}`, type: LinkType.LINK_TYPE_PIX });
  }
  return links;
}

function generateInventory(kind: NodeKind, ordinal: number, rand: () => number): NodeInventory {
  const name = `${kind.prefix}-${String(ordinal).padStart(5, '0')}`;
  const rack = `${kind.prefix}-r${Math.floor(ordinal / kind.nodesPerRack).toString().padStart(4, '0')}`;
  const zone = `zone-${'abc'[ordinal % 3]}`;
  const accelerators: Accelerator[] = [];
  for (let i = 0; i < kind.gpus; i++) {
    const mig = i < kind.migGpus;
    accelerators.push({
      id: `nvidia-${i}`,
      vendor: AcceleratorVendor.ACCELERATOR_VENDOR_NVIDIA,
      index: i,
      uuid: `GPU-${(ordinal * 16 + i).toString(16).padStart(8, '0')}-4b1f-9c3d-${i}e0a-5f6d7e8f9a0b`,
      product: kind.product,
      family: kind.family,
      memoryMib: kind.memoryMib,
      computeCapability: kind.computeCapability,
      pciBusId: `00000000:${(0x18 + i * 0x10).toString(16).toUpperCase()}:00.0`,
      numaNode: i < kind.gpus / 2 ? 0 : 1,
      cpuAffinity: i < kind.gpus / 2 ? `0-${kind.logicalCpus / 4 - 1}` : `${kind.logicalCpus / 4}-${kind.logicalCpus / 2 - 1}`,
      memoryUsedMib: Math.floor(rand() * kind.memoryMib),
      utilizationPercent: Math.floor(rand() * 100),
      temperatureCelsius: 30 + Math.floor(rand() * 45),
      powerLimitWatts: 700,
      migCapable: kind.product.includes('A100') || kind.product.includes('H100'),
      migEnabled: mig,
      migDevices: mig
        ? kind.migLayout.map((p, index) => ({
            uuid: `MIG-${ordinal}-${i}-${index}`,
            profile: p.profile,
            index,
            gpuInstanceId: index + 1,
            computeInstanceId: 0,
            placementStart: p.start,
            placementSize: p.size,
          }))
        : [],
      serial: `16523${String(ordinal * 8 + i).padStart(8, '0')}`,
    });
  }
  const nics: Nic[] = Array.from({ length: kind.nics }, (_, i) => ({
    name: `mlx5_${i}`,
    port: 1,
    linkLayer: 'InfiniBand',
    state: 'ACTIVE',
    rateGbps: 400,
    numaNode: i < kind.nics / 2 ? 0 : 1,
    pciBusId: `00000000:${(0x1a + i * 0x10).toString(16).toUpperCase()}:00.0`,
    netdev: `ib${i}`,
  }));
  const observedAt = new Date(Date.UTC(2025, 0, 1));
  return {
    nodeName: name,
    cluster: 'bench',
    os: 'linux/ubuntu-22.04',
    kernel: '5.15.0-119-generic',
    cpu: {
      vendor: kind.cpuVendor,
      model: kind.cpuModel,
      architecture: 'x86_64',
      sockets: kind.sockets,
      cores: kind.logicalCpus / 2,
      logicalCpus: kind.logicalCpus,
      numaNodes: 2,
    },
    memory: { totalMib: kind.memoryTotalMib, availableMib: Math.floor(kind.memoryTotalMib * 0.9) },
    localStorageGib: kind.localStorageGib,
    accelerators,
    nics,
    links: gpuLinks(kind.gpus, kind.nics),
    topology: { zone, rack, nvlinkDomain: kind.gpus > 0 ? `${name}-hgx` : '' },
    labels: {
      'kubernetes.io/hostname': name,
      'topology.kubernetes.io/zone': zone,
      'gpufleet.io/rack': rack,
      'feature.node.kubernetes.io/cpu-model.vendor_id': kind.cpuVendor === 'GenuineIntel' ? 'Intel' : 'AMD',
      'feature.node.kubernetes.io/kernel-version.full': '5.15.0-119-generic',
      ...(kind.gpus > 0
        ? {
            'nvidia.com/gpu.product': kind.product.replace(/^NVIDIA /, '').replace(/ /g, '-'),
            'nvidia.com/gpu.count': String(kind.gpus),
            'nvidia.com/gpu.memory': String(kind.memoryMib),
            'nvidia.com/mig.capable': String(kind.migGpus > 0),
          }
        : {}),
    },
    driverVersion: kind.gpus > 0 ? '550.90.07' : undefined,
    runtimeVersion: kind.gpus > 0 ? '12.4' : undefined,
    providers: ['nvidia', 'rdma', 'host'].map((provider) => ({
      provider,
      ok: true,
      error: '',
      lastSuccess: observedAt,
      lastAttempt: observedAt,
    })),
    generation: 1,
    observedAt,
    agentVersion: '0.1.0',
  };
}

function generateFleet(nodes: number, rand: () => number): NodeInventory[] {
  const fleet: NodeInventory[] = [];
  KINDS.forEach((kind, k) => {
    const count = k === KINDS.length - 1 ? nodes - fleet.length : Math.round(nodes * kind.share);
    for (let i = 0; i < count; i++) fleet.push(generateInventory(kind, i, rand));
  });
  return fleet;
}

/** What the devices ledger might hold: about 40% of nodes busy with whole, shared and sliced work. */
function generateAllocations(fleet: NodeInventory[], rand: () => number): Map<string, NodeAllocations> {
  const ledger = new Map<string, NodeAllocations>();
  for (const inventory of fleet) {
    if (rand() >= 0.4) continue;
    const accelerators: Record<string, AcceleratorAllocation> = {};
    let vcpu = 0;
    for (const a of inventory.accelerators) {
      if (a.migEnabled) continue;
      const r = rand();
      if (r < 0.5) accelerators[a.id] = { mode: 'whole' };
      else if (r < 0.6) accelerators[a.id] = { mode: 'shared', tokens: 1 + Math.floor(rand() * 9) };
      else if (r < 0.7) accelerators[a.id] = { mode: 'sliced', slices: [{ memoryMib: 20_480, coresPercent: 25 }] };
      else continue;
      vcpu += 16;
    }
    ledger.set(inventory.nodeName, { accelerators, vcpu, memoryMib: vcpu * 8_192 });
  }
  return ledger;
}

/**
 * What an agent republishes: usually telemetry (memory used, temperature), 1 in 20 times a
 * change that moves capacity (MIG switched on a GPU, or a GPU dropping off the bus).
 */
function updatedInventory(previous: NodeInventory, rand: () => number): NodeInventory {
  const accelerators = previous.accelerators.map((a) => ({ ...a }));
  const capacityChange = rand() < 0.05 && accelerators.length > 0;
  if (capacityChange) {
    const i = Math.floor(rand() * accelerators.length);
    if (rand() < 0.5) accelerators[i].migEnabled = !accelerators[i].migEnabled;
    else accelerators.splice(i, 1);
  }
  for (const a of accelerators) {
    a.memoryUsedMib = Math.floor(rand() * (a.memoryMib ?? 0));
    a.temperatureCelsius = 30 + Math.floor(rand() * 45);
    a.utilizationPercent = Math.floor(rand() * 100);
  }
  return { ...previous, accelerators, generation: previous.generation + 1, observedAt: new Date() };
}

// ---- measurement -------------------------------------------------------------------------

function deriveFromScratch(fleet: readonly NodeInventory[], ledger: ReadonlyMap<string, NodeAllocations>): CapacityModel {
  const model = new CapacityModel();
  model.batch(() => {
    for (const [name, allocations] of ledger) model.setAllocations(name, allocations);
    for (const inventory of fleet) {
      model.upsertNode(inventory);
      model.setPhase(inventory.nodeName, NodePhase.NODE_PHASE_READY);
    }
  });
  return model;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const percentile = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const fmt = (x: number, digits = 1): string => x.toFixed(digits);

function timeEach<T>(items: readonly T[], apply: (item: T) => void): number[] {
  const micros: number[] = new Array(items.length);
  for (let i = 0; i < items.length; i++) {
    const start = process.hrtime.bigint();
    apply(items[i]);
    micros[i] = Number(process.hrtime.bigint() - start) / 1_000;
  }
  return micros;
}

function rssMib(): number {
  global.gc?.();
  global.gc?.();
  return process.memoryUsage().rss / 1024 / 1024;
}

export async function run(args: string[]): Promise<void> {
  const options = parseOptions(args);
  const rand = random(20_250_101);
  const baseRss = rssMib();

  const fleet = generateFleet(options.nodes, rand);
  const ledger = generateAllocations(fleet, rand);
  const gpus = fleet.reduce((n, inv) => n + inv.accelerators.length, 0);
  console.log(`fleet: ${fleet.length} nodes, ${gpus} accelerators, ${ledger.size} nodes with allocations`);
  console.log(`rss before the model: ${fmt(baseRss)} MiB base, ${fmt(rssMib())} MiB with the generated inventories`);

  // From scratch: every node upserted, set Ready and its allocations applied, in one batch.
  deriveFromScratch(fleet, ledger); // warm-up (JIT)
  const deriveMs: number[] = [];
  for (let i = 0; i < options.deriveRuns; i++) {
    const start = performance.now();
    deriveFromScratch(fleet, ledger);
    deriveMs.push(performance.now() - start);
  }
  const deriveAllMs = median(deriveMs);
  console.log(`derive all (batched): median ${fmt(deriveAllMs)} ms over ${options.deriveRuns} runs [${deriveMs.map((x) => fmt(x)).join(', ')}]`);

  // The same fleet applied one mutation at a time, each reporting its own events.
  const unbatched = new CapacityModel();
  const start = performance.now();
  let unbatchedEvents = 0;
  for (const [name, allocations] of ledger) unbatched.setAllocations(name, allocations);
  for (const inventory of fleet) {
    unbatchedEvents += unbatched.upsertNode(inventory).length;
    unbatchedEvents += unbatched.setPhase(inventory.nodeName, NodePhase.NODE_PHASE_READY).length;
  }
  console.log(`derive all (one call per node, events each): ${fmt(performance.now() - start)} ms, ${unbatchedEvents} events`);

  const model = deriveFromScratch(fleet, ledger);
  const pools = model.listPools();
  const types = model.listInstanceTypes();
  console.log(`pools: ${pools.map((p) => `${p.name} (${p.nodes.length} nodes, ${p.accelerators} acc, ${p.migAccelerators} MIG)`).join('; ')}`);
  console.log(`instance types: ${types.length}`);
  const h100 = types.find((t) => t.name === 'h100-80gb-hbm3-x86-64.8x');
  if (h100) console.log(`h100-80gb-hbm3-x86-64.8x whole: ${JSON.stringify(h100.capacity?.whole)}`);

  // Inventory updates against the live model.
  const current = new Map(fleet.map((inv) => [inv.nodeName, inv]));
  const updates: NodeInventory[] = [];
  for (let i = 0; i < options.updates; i++) {
    const name = fleet[Math.floor(rand() * fleet.length)].nodeName;
    const next = updatedInventory(current.get(name) as NodeInventory, rand);
    current.set(name, next);
    updates.push(next);
  }
  let updateEvents = 0;
  timeEach(updates.slice(0, Math.min(1_000, updates.length)), () => undefined); // warm the timer path
  const updateMicros = timeEach(updates, (inv) => {
    updateEvents += model.upsertNode(inv).length;
  });
  const updateUs = mean(updateMicros);
  console.log(
    `inventory update: mean ${fmt(updateUs, 2)} µs, p50 ${fmt(percentile(updateMicros, 0.5), 2)} µs, p99 ${fmt(percentile(updateMicros, 0.99), 2)} µs, max ${fmt(Math.max(...updateMicros), 0)} µs over ${updates.length} updates (${updateEvents} events)`,
  );

  // Phase changes: a node misses heartbeats, then comes back.
  const phaseChanges: { name: string; phase: NodePhase }[] = [];
  for (let i = 0; i < options.updates / 2; i++) {
    const name = fleet[Math.floor(rand() * fleet.length)].nodeName;
    phaseChanges.push({ name, phase: NodePhase.NODE_PHASE_NOT_READY }, { name, phase: NodePhase.NODE_PHASE_READY });
  }
  let phaseEvents = 0;
  const phaseMicros = timeEach(phaseChanges, (c) => {
    phaseEvents += model.setPhase(c.name, c.phase).length;
  });
  const phaseUs = mean(phaseMicros);
  console.log(
    `phase change: mean ${fmt(phaseUs, 2)} µs, p50 ${fmt(percentile(phaseMicros, 0.5), 2)} µs, p99 ${fmt(percentile(phaseMicros, 0.99), 2)} µs, max ${fmt(Math.max(...phaseMicros), 0)} µs over ${phaseChanges.length} changes (${phaseEvents} events)`,
  );

  // Baseline: the naive way, re-deriving the whole fleet after each update.
  const records = new Map(current);
  const baselineMs: number[] = [];
  for (let i = 0; i < options.baselineUpdates; i++) {
    const name = fleet[Math.floor(rand() * fleet.length)].nodeName;
    const t0 = performance.now();
    records.set(name, updatedInventory(records.get(name) as NodeInventory, rand));
    deriveFromScratch([...records.values()], ledger);
    baselineMs.push(performance.now() - t0);
  }
  const baselineUs = mean(baselineMs) * 1_000;
  const updateHeadlineUs = Math.max(updateUs, phaseUs);
  console.log(`baseline (full re-derivation per update): mean ${fmt(baselineUs / 1_000)} ms per update over ${options.baselineUpdates} updates`);
  console.log(`speedup: ${fmt(baselineUs / updateUs, 0)}× per inventory update, ${fmt(baselineUs / phaseUs, 0)}× per phase change`);

  const rss = rssMib();
  const heap = process.memoryUsage().heapUsed / 1024 / 1024;
  console.log(`heap used: ${fmt(heap)} MiB (model + ${fleet.length} inventories held by the benchmark)`);
  // Keep the model reachable until RSS is taken.
  if (model.listPools().length === 0) console.log('no pools');

  console.log(`derive_all_ms: ${fmt(deriveAllMs)}`);
  console.log(`update_us: ${fmt(updateHeadlineUs, 2)}`);
  console.log(`rss_mib: ${fmt(rss, 0)}`);
}
