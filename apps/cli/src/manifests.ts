import { parseAllDocuments } from 'yaml';
import {
  ClusterQueue,
  LocalQueue,
  PreemptionPolicy,
  QueueingStrategy,
  WorkloadSpec,
} from '@gpufleet/contracts';

export type Manifest =
  | { kind: 'Workload'; spec: WorkloadSpec }
  | { kind: 'ClusterQueue'; queue: ClusterQueue }
  | { kind: 'LocalQueue'; queue: LocalQueue };

/** Known keys per object in a manifest, so a typo is an error rather than silently ignored. */
const KEYS: Record<string, string[]> = {
  Workload: ['kind', 'namespace', 'name', 'localQueue', 'priority', 'podSets', 'labels'],
  podSet: ['name', 'count', 'size', 'resources', 'topology'],
  resources: ['accelerator', 'vcpu', 'memoryMib'],
  accelerator: ['whole', 'sharedTokens', 'slice', 'partitionProfile'],
  slice: ['memoryMib', 'memoryPercent', 'coresPercent'],
  topology: ['requiredLevel', 'preferredLevel'],
  ClusterQueue: [
    'kind', 'name', 'pool', 'cohort', 'queueingStrategy', 'nominalQuota', 'borrowingLimit', 'lendingLimit',
    'fairSharingWeight', 'withinClusterQueue', 'reclaimWithinCohort', 'packing',
  ],
  LocalQueue: ['kind', 'namespace', 'name', 'clusterQueue'],
};

const STRATEGIES: Record<string, QueueingStrategy> = {
  StrictFIFO: QueueingStrategy.QUEUEING_STRATEGY_STRICT_FIFO,
  BestEffortFIFO: QueueingStrategy.QUEUEING_STRATEGY_BEST_EFFORT_FIFO,
};
const POLICIES: Record<string, PreemptionPolicy> = {
  Never: PreemptionPolicy.PREEMPTION_POLICY_NEVER,
  LowerPriority: PreemptionPolicy.PREEMPTION_POLICY_LOWER_PRIORITY,
  Any: PreemptionPolicy.PREEMPTION_POLICY_ANY,
};

class ManifestError extends Error {}

function checkKeys(obj: unknown, allowed: string[], path: string): Record<string, unknown> {
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) throw new ManifestError(`${path}: expected a mapping`);
  for (const key of Object.keys(obj)) {
    if (!allowed.includes(key)) throw new ManifestError(`${path}.${key}: unknown field (expected one of ${allowed.join(', ')})`);
  }
  return obj as Record<string, unknown>;
}

function enumValue<T>(table: Record<string, T>, value: unknown, path: string): T | undefined {
  if (value === undefined) return undefined;
  const hit = table[String(value)];
  if (hit === undefined) throw new ManifestError(`${path}: expected one of ${Object.keys(table).join(', ')}, got ${JSON.stringify(value)}`);
  return hit;
}

function parseWorkload(doc: Record<string, unknown>, at: string): WorkloadSpec {
  checkKeys(doc, KEYS.Workload, at);
  const podSets = doc.podSets;
  if (!Array.isArray(podSets)) throw new ManifestError(`${at}.podSets: expected a list of pod sets`);
  podSets.forEach((ps, i) => {
    const p = `${at}.podSets[${i}]`;
    const set = checkKeys(ps, KEYS.podSet, p);
    if (set.resources !== undefined) {
      const r = checkKeys(set.resources, KEYS.resources, `${p}.resources`);
      if (r.accelerator !== undefined) {
        const a = checkKeys(r.accelerator, KEYS.accelerator, `${p}.resources.accelerator`);
        if (a.slice !== undefined) checkKeys(a.slice, KEYS.slice, `${p}.resources.accelerator.slice`);
      }
    }
    if (set.topology !== undefined) checkKeys(set.topology, KEYS.topology, `${p}.topology`);
  });
  const { kind: _kind, ...rest } = doc;
  return WorkloadSpec.fromJSON({ namespace: 'default', ...rest });
}

function parseClusterQueue(doc: Record<string, unknown>, at: string): ClusterQueue {
  checkKeys(doc, KEYS.ClusterQueue, at);
  const { kind: _kind, queueingStrategy, withinClusterQueue, reclaimWithinCohort, ...rest } = doc;
  const q = ClusterQueue.fromJSON(rest);
  q.queueingStrategy = enumValue(STRATEGIES, queueingStrategy, `${at}.queueingStrategy`) ?? QueueingStrategy.QUEUEING_STRATEGY_BEST_EFFORT_FIFO;
  q.withinClusterQueue = enumValue(POLICIES, withinClusterQueue, `${at}.withinClusterQueue`) ?? PreemptionPolicy.PREEMPTION_POLICY_NEVER;
  q.reclaimWithinCohort = enumValue(POLICIES, reclaimWithinCohort, `${at}.reclaimWithinCohort`) ?? PreemptionPolicy.PREEMPTION_POLICY_NEVER;
  return q;
}

/** Parses a (multi-document) YAML manifest of Workloads, ClusterQueues and LocalQueues. */
export function parseManifests(text: string, source: string): Manifest[] {
  const out: Manifest[] = [];
  parseAllDocuments(text).forEach((d, i) => {
    const at = `${source}#${i + 1}`;
    if (d.errors.length > 0) throw new ManifestError(`${at}: ${d.errors[0].message}`);
    const doc = d.toJS() as unknown;
    if (doc === null || doc === undefined) return;
    const obj = checkKeys(doc, [...new Set([...KEYS.Workload, ...KEYS.ClusterQueue, ...KEYS.LocalQueue])], at);
    switch (obj.kind) {
      case 'Workload':
        out.push({ kind: 'Workload', spec: parseWorkload(obj, at) });
        break;
      case 'ClusterQueue':
        out.push({ kind: 'ClusterQueue', queue: parseClusterQueue(obj, at) });
        break;
      case 'LocalQueue':
        checkKeys(obj, KEYS.LocalQueue, at);
        out.push({ kind: 'LocalQueue', queue: LocalQueue.fromJSON({ namespace: 'default', ...obj }) });
        break;
      default:
        throw new ManifestError(`${at}.kind: expected Workload, ClusterQueue or LocalQueue, got ${JSON.stringify(obj.kind)}`);
    }
  });
  if (out.length === 0) throw new ManifestError(`${source}: no documents`);
  return out;
}
