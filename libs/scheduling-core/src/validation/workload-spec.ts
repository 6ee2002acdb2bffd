/**
 * Admission gate 1: is the workload well formed, and could its pool ever hold it? Every problem
 * is reported (not just the first) so one round trip fixes the request.
 */
import type { AcceleratorRequest, PodResources, PodSet, WorkloadSpec } from '@gpufleet/contracts';
import { SHARED_TOKENS_PER_ACCELERATOR } from '@gpufleet/capacity-core';
import { migProfileIndex } from '@gpufleet/device-inventory';
import { checkDns1123Label, checkIntegerRange } from './names';
import { PoolShape } from './pool-shape';
import { formatCount, problem, shown, ValidationProblem } from './problems';
import { isTopologyLevel, TOPOLOGY_LEVELS, topologyRank } from './topology';

/** Kueue's limit: a workload is a handful of pod groups (e.g. prefill and decode), not a list of pods. */
export const MAX_POD_SETS = 8;
const MAX_UINT32 = 0xffff_ffff;

/** Where the workload's LocalQueue leads, or why it leads nowhere. */
export type LocalQueueResolution =
  | { readonly ok: true; readonly clusterQueue: string; readonly pool: PoolShape }
  /** Reported as `localQueue: expected <expected>, got <got>`. */
  | { readonly ok: false; readonly expected: string; readonly got: string };

export interface WorkloadValidationContext {
  /** `pool`: the pool the workload is sized for (WorkloadSpec.pool), when it names one. */
  resolveLocalQueue(namespace: string, localQueue: string, pool?: string): LocalQueueResolution;
}

type AcceleratorMode = 'whole' | 'sharedTokens' | 'slice' | 'partitionProfile';
const MODES: readonly AcceleratorMode[] = ['whole', 'sharedTokens', 'slice', 'partitionProfile'];

/** The modes a request sets; a well-formed request sets exactly one. */
export function acceleratorModes(request: AcceleratorRequest | undefined): AcceleratorMode[] {
  if (!request) return [];
  return MODES.filter((m) => request[m] !== undefined && request[m] !== null);
}

export function validateWorkloadSpec(spec: WorkloadSpec, context: WorkloadValidationContext): ValidationProblem[] {
  const problems: ValidationProblem[] = [];
  const add = (p: ValidationProblem | undefined): void => {
    if (p) problems.push(p);
  };
  add(checkDns1123Label('name', spec.name));
  add(checkDns1123Label('namespace', spec.namespace));
  add(checkIntegerRange('priority', spec.priority, -(2 ** 31), 2 ** 31 - 1, 'int32'));

  let pool: PoolShape | undefined;
  const lqProblem = checkDns1123Label('localQueue', spec.localQueue);
  if (lqProblem) {
    problems.push(lqProblem);
  } else if (problems.every((p) => p.field !== 'namespace')) {
    const resolved = context.resolveLocalQueue(spec.namespace, spec.localQueue, spec.pool || undefined);
    if (resolved.ok) pool = resolved.pool;
    else problems.push(problem('localQueue', resolved.expected, resolved.got));
  }

  const podSets = spec.podSets ?? [];
  if (podSets.length < 1 || podSets.length > MAX_POD_SETS) {
    problems.push(problem('podSets', `1 to ${MAX_POD_SETS} pod sets`, String(podSets.length)));
  }
  const firstByName = new Map<string, number>();
  podSets.forEach((podSet, i) => {
    const at = `podSets[${i}]`;
    const nameProblem = checkDns1123Label(`${at}.name`, podSet.name);
    if (nameProblem) problems.push(nameProblem);
    else if (firstByName.has(podSet.name)) {
      problems.push(problem(`${at}.name`, `a name unique among the pod sets`, `${shown(podSet.name)} (also podSets[${firstByName.get(podSet.name)}])`));
    } else firstByName.set(podSet.name, i);
    add(checkIntegerRange(`${at}.count`, podSet.count, 1, MAX_UINT32, 'replicas'));
    add(checkIntegerRange(`${at}.size`, podSet.size, 1, MAX_UINT32, 'pods per replica'));
    problems.push(...validateTopology(at, podSet));
    if (!podSet.resources) problems.push(problem(`${at}.resources`, 'per-pod resources', 'none'));
    else problems.push(...validatePodResources(`${at}.resources`, podSet.resources, pool));
  });
  if (pool && problems.length === 0) problems.push(...validatePoolTotals(podSets, pool), ...validateGangs(podSets, pool));
  return problems;
}

function validateTopology(at: string, podSet: PodSet): ValidationProblem[] {
  const topology = podSet.topology;
  if (!topology) return [];
  const problems: ValidationProblem[] = [];
  const expected = `one of ${TOPOLOGY_LEVELS.join(', ')} (or empty)`;
  const required = topology.requiredLevel ?? '';
  const preferred = topology.preferredLevel ?? '';
  if (required !== '' && !isTopologyLevel(required)) problems.push(problem(`${at}.topology.requiredLevel`, expected, shown(required)));
  if (preferred !== '' && !isTopologyLevel(preferred)) problems.push(problem(`${at}.topology.preferredLevel`, expected, shown(preferred)));
  // Placement tries the preferred level and widens up to the required one; a preferred level
  // wider than the required one could never be tried, so it is a contradiction, not a hint.
  if (isTopologyLevel(required) && isTopologyLevel(preferred) && topologyRank(preferred) > topologyRank(required)) {
    problems.push(
      problem(`${at}.topology.preferredLevel`, `a level no wider than requiredLevel ${shown(required)} (narrowest first: ${TOPOLOGY_LEVELS.join(', ')})`, shown(preferred)),
    );
  }
  return problems;
}

function validatePodResources(at: string, resources: PodResources, pool: PoolShape | undefined): ValidationProblem[] {
  const problems: ValidationProblem[] = [];
  const add = (p: ValidationProblem | undefined): void => {
    if (p) problems.push(p);
  };
  const largest = pool?.largestNode;
  const accelerator = resources.accelerator;
  const cpuOnly = accelerator === undefined || accelerator === null;
  const vcpuMax = largest ? largest.vcpu : MAX_UINT32;
  // A pod without accelerators that asks for no CPU would cost nothing and hold nothing.
  const vcpuWhy = (): string =>
    [cpuOnly ? 'a pod without accelerators needs CPU' : '', largest ? `the largest node of pool ${pool?.name} has ${largest.vcpu} vCPU` : '']
      .filter((s) => s !== '')
      .join('; ');
  add(checkIntegerRange(`${at}.vcpu`, resources.vcpu, cpuOnly ? 1 : 0, vcpuMax, vcpuWhy));
  const memoryMax = largest ? largest.memoryMib : Number.MAX_SAFE_INTEGER;
  add(checkIntegerRange(`${at}.memoryMib`, resources.memoryMib, 0, memoryMax, () => (largest ? `MiB; the largest node of pool ${pool?.name} has ${formatCount(largest.memoryMib)} MiB` : 'MiB')));
  if (!cpuOnly) problems.push(...validateAccelerator(`${at}.accelerator`, accelerator, pool));
  if (pool && problems.length === 0) add(checkOneNodeFits(at, resources, pool));
  return problems;
}

function validateAccelerator(at: string, request: AcceleratorRequest, pool: PoolShape | undefined): ValidationProblem[] {
  const modes = acceleratorModes(request);
  if (modes.length !== 1) {
    return [problem(at, `exactly one of ${MODES.join(', ')}`, modes.length === 0 ? 'none' : modes.join(' and '))];
  }
  const mode = modes[0];
  if (pool && pool.acceleratorProduct === '') {
    return [problem(at, `no accelerator (pool ${pool.name} is CPU-only)`, mode)];
  }
  if (pool && mode !== 'partitionProfile' && pool.totalAccelerators === 0) {
    return [problem(at, `partitionProfile (every accelerator of pool ${pool.name} has MIG enabled and offers partitions only)`, mode)];
  }
  const problems: ValidationProblem[] = [];
  const add = (p: ValidationProblem | undefined): void => {
    if (p) problems.push(p);
  };
  switch (mode) {
    case 'whole': {
      const max = pool ? pool.largestNode.accelerators : MAX_UINT32;
      add(checkIntegerRange(`${at}.whole`, request.whole, 1, max, () => (pool ? `the largest node of pool ${pool.name} has ${max} accelerators` : 'accelerators on one node')));
      break;
    }
    case 'sharedTokens':
      add(checkIntegerRange(`${at}.sharedTokens`, request.sharedTokens, 1, SHARED_TOKENS_PER_ACCELERATOR, `${SHARED_TOKENS_PER_ACCELERATOR} tokens are one accelerator`));
      break;
    case 'slice': {
      const slice = request.slice;
      if (!slice) break;
      const hasMib = slice.memoryMib !== undefined && slice.memoryMib !== null;
      const hasPercent = slice.memoryPercent !== undefined && slice.memoryPercent !== null;
      if (hasMib === hasPercent) {
        problems.push(problem(`${at}.slice`, 'exactly one memory budget (memoryMib or memoryPercent)', hasMib ? 'both' : 'neither'));
      } else if (hasMib) {
        const max = pool && pool.acceleratorMemoryMib > 0 ? pool.acceleratorMemoryMib : Number.MAX_SAFE_INTEGER;
        add(checkIntegerRange(`${at}.slice.memoryMib`, slice.memoryMib, 1, max, () => (pool ? `MiB; one accelerator of pool ${pool.name} has ${formatCount(max)} MiB` : 'MiB')));
      } else {
        add(checkIntegerRange(`${at}.slice.memoryPercent`, slice.memoryPercent, 1, 100, 'percent of one accelerator'));
      }
      add(checkIntegerRange(`${at}.slice.coresPercent`, slice.coresPercent, 1, 100, 'percent of one accelerator'));
      break;
    }
    case 'partitionProfile':
      add(checkPartitionProfile(`${at}.partitionProfile`, request.partitionProfile ?? '', pool));
      break;
  }
  return problems;
}

function checkPartitionProfile(at: string, profile: string, pool: PoolShape | undefined): ValidationProblem | undefined {
  if (profile.trim() === '') return problem(at, 'a MIG profile name such as "3g.40gb"', 'an empty string');
  if (!pool) return undefined;
  const geometry = pool.migGeometry;
  if (!geometry) return problem(at, `no MIG profile (${pool.acceleratorProduct} in pool ${pool.name} offers no MIG partitions)`, shown(profile));
  if (migProfileIndex(geometry, profile) < 0) {
    return problem(at, `a MIG profile pool ${pool.name} offers (${geometry.profiles.map((p) => p.name).join(', ')})`, shown(profile));
  }
  if (pool.totalMigAccelerators === 0) {
    return problem(at, `a pool with MIG-enabled accelerators (none of the ${pool.totalAccelerators} accelerators of pool ${pool.name} has MIG enabled)`, shown(profile));
  }
  return undefined;
}

/** What one pod takes from one node, in the terms a node shape counts. */
function podNodeNeed(resources: PodResources): { accelerators: number; migAccelerators: number; vcpu: number; memoryMib: number } {
  const a = resources.accelerator;
  const mode = acceleratorModes(a)[0];
  return {
    accelerators: mode === 'whole' ? (a?.whole ?? 0) : mode === 'sharedTokens' || mode === 'slice' ? 1 : 0,
    migAccelerators: mode === 'partitionProfile' ? 1 : 0,
    vcpu: resources.vcpu,
    memoryMib: resources.memoryMib,
  };
}

/** Each figure may fit the largest node while no single node has them all. */
function checkOneNodeFits(at: string, resources: PodResources, pool: PoolShape): ValidationProblem | undefined {
  const need = podNodeNeed(resources);
  const fits = pool.nodeShapes.some(
    (s) => s.accelerators >= need.accelerators && s.migAccelerators >= need.migAccelerators && s.vcpu >= need.vcpu && s.memoryMib >= need.memoryMib,
  );
  if (fits) return undefined;
  const shapes = pool.nodeShapes
    .map((s) => `${s.accelerators + s.migAccelerators} accelerators${s.migAccelerators > 0 ? ` (${s.migAccelerators} MIG)` : ''}, ${s.vcpu} vCPU, ${formatCount(s.memoryMib)} MiB`)
    .join('; ');
  const accel = need.accelerators > 0 ? `${need.accelerators} accelerators, ` : need.migAccelerators > 0 ? '1 MIG accelerator, ' : '';
  return problem(at, `a pod one node of pool ${pool.name} can hold (nodes: ${shapes || 'none'})`, `${accel}${need.vcpu} vCPU, ${formatCount(need.memoryMib)} MiB`);
}

/**
 * A replica of several pods (a multi-node engine) is placed at once, as a gang: the pool must
 * hold `size` pods of that shape together, whatever else runs. Counted per node (a node of 8
 * holds two pods of 4); topology domains and live load are the Placer's business.
 */
function validateGangs(podSets: readonly PodSet[], pool: PoolShape): ValidationProblem[] {
  const problems: ValidationProblem[] = [];
  podSets.forEach((podSet, i) => {
    const whole = podSet.resources?.accelerator?.whole ?? 0;
    if (podSet.size <= 1 || whole <= 0) return;
    const slots = pool.nodeShapes.reduce((n, shape) => n + Math.floor(shape.accelerators / whole) * shape.nodes, 0);
    if (slots >= podSet.size) return;
    const nodes = pool.nodeShapes.reduce((n, shape) => n + shape.nodes, 0);
    problems.push(
      problem(
        `podSets[${i}].size`,
        `at most ${slots} pods of ${whole} whole accelerators in one replica (its pods are placed together: the ${nodes} nodes of pool ${pool.name} hold ${slots} such pods)`,
        `${podSet.size} (${podSet.size * whole} accelerators)`,
      ),
    );
  });
  return problems;
}

/**
 * Lower bounds on the accelerators the whole workload needs, against what the pool has on all
 * its nodes. Tokens and slices of different pods may share an accelerator, so they count as
 * fractions here; placement decides the rest.
 */
function validatePoolTotals(podSets: readonly PodSet[], pool: PoolShape): ValidationProblem[] {
  let whole = 0;
  let tokens = 0;
  let sliceCores = 0;
  let vcpu = 0;
  let memoryMib = 0;
  const partitions = new Map<string, number>();
  for (const podSet of podSets) {
    const pods = podSet.count * podSet.size;
    vcpu += (podSet.resources?.vcpu ?? 0) * pods;
    memoryMib += (podSet.resources?.memoryMib ?? 0) * pods;
    const a = podSet.resources?.accelerator;
    switch (acceleratorModes(a)[0]) {
      case 'whole':
        whole += (a?.whole ?? 0) * pods;
        break;
      case 'sharedTokens':
        tokens += (a?.sharedTokens ?? 0) * pods;
        break;
      case 'slice':
        sliceCores += (a?.slice?.coresPercent ?? 0) * pods;
        break;
      case 'partitionProfile': {
        const profile = (a?.partitionProfile ?? '').trim().toLowerCase().replace(/^mig\s+/, '');
        partitions.set(profile, (partitions.get(profile) ?? 0) + pods);
        break;
      }
    }
  }
  const problems: ValidationProblem[] = [];
  const needed = whole + Math.ceil(tokens / SHARED_TOKENS_PER_ACCELERATOR) + Math.ceil(sliceCores / 100);
  if (needed > pool.totalAccelerators) {
    const parts = [whole > 0 ? `${whole} whole` : '', tokens > 0 ? `${tokens} shared tokens` : '', sliceCores > 0 ? `slices totalling ${sliceCores}% compute` : '']
      .filter((s) => s !== '')
      .join(' + ');
    problems.push(
      problem('podSets', `at most ${pool.totalAccelerators} accelerators in total (all nodes of pool ${pool.name}, MIG-enabled ones excluded)`, `${needed} (${parts})`),
    );
  }
  // CPU and memory bound the pods of every workload, CPU-only ones too: a pool never holds
  // more than all its nodes have (4 294 967 295 one-vCPU pods were accepted before).
  const poolVcpu = pool.nodeShapes.reduce((n, s) => n + s.vcpu * s.nodes, 0);
  const poolMemoryMib = pool.nodeShapes.reduce((n, s) => n + s.memoryMib * s.nodes, 0);
  if (vcpu > poolVcpu) problems.push(problem('podSets', `at most ${formatCount(poolVcpu)} vCPU in total (all nodes of pool ${pool.name})`, `${formatCount(vcpu)} vCPU`));
  if (memoryMib > poolMemoryMib) problems.push(problem('podSets', `at most ${formatCount(poolMemoryMib)} MiB in total (all nodes of pool ${pool.name})`, `${formatCount(memoryMib)} MiB`));
  const geometry = pool.migGeometry;
  if (geometry) {
    for (const [name, pods] of partitions) {
      const profile = geometry.profiles[migProfileIndex(geometry, name)];
      if (!profile) continue;
      const capacity = pool.totalMigAccelerators * profile.placeableByMask[0];
      if (pods > capacity) {
        problems.push(
          problem('podSets', `at most ${capacity} partitions of ${name} in total (${pool.totalMigAccelerators} MIG-enabled accelerators of pool ${pool.name}, ${profile.placeableByMask[0]} each)`, `${pods} pods`),
        );
      }
    }
  }
  return problems;
}
