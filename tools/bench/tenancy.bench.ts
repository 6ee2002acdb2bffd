// One-namespace-at-a-time nodes benchmark (issue 13): what fencing costs a placement. A node
// whose pods run unconfined takes one namespace at a time; the PlacementEngine takes such nodes
// out of its index for a request of another namespace (and puts them back after), so the cost
// grows with the number of exclusive nodes another namespace occupies.
//
//   npm run bench -- tenancy [--nodes 1000] [--requests 2000]
//
// A pool of `--nodes` 8-GPU nodes; a share of them exclusive and each holding one GPU of
// namespace a; `--requests` tryPlace calls of namespace b for one whole GPU (never committed, so
// every call sees the same state). Baseline in the same run: the same pool with no exclusive node.
// Ends with fence_ratio_1pct and fence_ratio_10pct (per-request time against the baseline) and
// fenced_place_us_10pct.
import { PodPlacement, PodSet } from '@gpufleet/contracts';
import { PlacementEngine } from '@gpufleet/scheduling-core';
import { node } from '@gpufleet/testing';
import { positiveIntOptions } from './support/options';

const ONE_GPU: PodSet = { name: 'main', count: 1, size: 1, resources: { accelerator: { whole: 1, sharedTokens: undefined, slice: undefined, partitionProfile: undefined }, vcpu: 0, memoryMib: 0 }, topology: { requiredLevel: '', preferredLevel: '' } };

function engineWith(nodes: number, exclusiveShare: number): PlacementEngine {
  const engine = new PlacementEngine();
  const exclusive = Math.round(nodes * exclusiveShare);
  for (let i = 0; i < nodes; i++) engine.upsertNode(node(`n-${i}`), true, 'p', i < exclusive ? 'exclusive' : 'shared');
  for (let i = 0; i < exclusive; i++) {
    const pod: PodPlacement = { ...PodPlacement.fromPartial({}), podSet: 'main', node: `n-${i}`, acceleratorIds: ['nvidia-0'] };
    engine.commit(`a/w${i}`, [pod]);
  }
  return engine;
}

/** Microseconds per tryPlace, the median of 5 rounds. */
function perRequestUs(engine: PlacementEngine, requests: number): number {
  const rounds: number[] = [];
  for (let r = 0; r < 5; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < requests; i++) {
      const outcome = engine.tryPlace({ key: `b/x${i}`, pool: 'p', podSets: [ONE_GPU], packing: 'binpack' });
      if (!outcome.ok) throw new Error(outcome.message);
    }
    rounds.push(Number(process.hrtime.bigint() - start) / 1e3 / requests);
  }
  return rounds.sort((a, b) => a - b)[2];
}

export async function run(args: string[]): Promise<void> {
  const { nodes, requests } = positiveIntOptions(args, { nodes: 1000, requests: 2000 });
  const shares = [0, 0.01, 0.1, 0.5];
  const us = new Map<number, number>();
  for (const share of shares) {
    const engine = engineWith(nodes, share);
    perRequestUs(engine, Math.min(200, requests)); // warm-up
    us.set(share, perRequestUs(engine, requests));
    const problems = engine.auditIndexes();
    if (problems.length > 0) throw new Error(`index audit after fencing: ${problems.slice(0, 3).join('; ')}`);
  }
  const base = us.get(0)!;
  console.log(`pool: ${nodes} nodes x 8 GPUs; ${requests} requests of namespace b for 1 whole GPU per form`);
  for (const share of shares) {
    console.log(`exclusive nodes held by namespace a: ${(share * 100).toFixed(0).padStart(2)} % (${Math.round(nodes * share)}): ${us.get(share)!.toFixed(1)} us per placement, ${(us.get(share)! / base).toFixed(2)}x the baseline`);
  }
  console.log(`fence_ratio_1pct: ${(us.get(0.01)! / base).toFixed(2)}`);
  console.log(`fence_ratio_10pct: ${(us.get(0.1)! / base).toFixed(2)}`);
  console.log(`fenced_place_us_10pct: ${us.get(0.1)!.toFixed(1)}`);
}
