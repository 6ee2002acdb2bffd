import { parseAllDocuments } from 'yaml';
import {
  ClusterQueue,
  GPUInstanceSpec,
  LocalQueue,
  ModelDeploymentSpec,
  PreemptionPolicy,
  QueueingStrategy,
  WorkloadSpec,
} from '@gpufleet/contracts';
import { ENGINE_KINDS, ENGINE_MODES, ENGINE_ROLES, SPECULATIVE_METHODS } from '@gpufleet/engine-presets';

export type Manifest =
  | { kind: 'Workload'; spec: WorkloadSpec }
  | { kind: 'ClusterQueue'; queue: ClusterQueue }
  | { kind: 'LocalQueue'; queue: LocalQueue }
  | { kind: 'ModelDeployment'; spec: ModelDeploymentSpec }
  | { kind: 'GPUInstance'; spec: GPUInstanceSpec };

const KINDS = ['Workload', 'ClusterQueue', 'LocalQueue', 'ModelDeployment', 'GPUInstance'];

/** Known keys per object in a manifest, so a typo is an error rather than silently ignored. */
const KEYS: Record<string, string[]> = {
  Workload: ['kind', 'namespace', 'name', 'localQueue', 'priority', 'podSets', 'labels', 'pool'],
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
  ModelDeployment: ['kind', 'namespace', 'name', 'localQueue', 'priority', 'model', 'artifact', 'servedModelName', 'engine', 'roles', 'labels'],
  engine: ['engine', 'version', 'mode', 'customCommand', 'extraArgs', 'env', 'envFromSecret', 'speculative', 'kvOffload'],
  secretKeyRef: ['name', 'key'],
  speculative: ['method', 'draftModel', 'numSpeculativeTokens'],
  kvOffload: ['connector', 'cpuBytes'],
  role: ['role', 'replicas', 'size', 'instanceType', 'resources', 'topology', 'extraArgs', 'env', 'envFromSecret'],
  GPUInstance: [
    'kind', 'namespace', 'name', 'localQueue', 'priority', 'instanceType', 'resources', 'command', 'image', 'env',
    'envFromSecret', 'sshPublicKeys', 'stop', 'labels',
  ],
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

function checkResources(resources: unknown, path: string): void {
  const r = checkKeys(resources, KEYS.resources, path);
  if (r.accelerator !== undefined) {
    const a = checkKeys(r.accelerator, KEYS.accelerator, `${path}.accelerator`);
    if (a.slice !== undefined) checkKeys(a.slice, KEYS.slice, `${path}.accelerator.slice`);
  }
}

function checkList(value: unknown, path: string, what: string): void {
  if (value !== undefined && !Array.isArray(value)) throw new ManifestError(`${path}: expected a list of ${what}`);
}

function checkString(value: unknown, path: string): void {
  if (value !== undefined && typeof value !== 'string') throw new ManifestError(`${path}: expected a string, got ${JSON.stringify(value)}`);
}

function checkOneOf(value: unknown, allowed: readonly string[], path: string): void {
  if (value !== undefined && !allowed.includes(String(value))) {
    throw new ManifestError(`${path}: expected one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`);
  }
}

/** `envFromSecret: { HF_TOKEN: { name: hf-token, key: token } }`: each variable names a Secret of the namespace and one of its keys. */
function checkEnvFromSecret(value: unknown, path: string): void {
  if (value === undefined) return;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ManifestError(`${path}: expected a mapping of VARIABLE: {name: SECRET, key: KEY}`);
  for (const [name, ref] of Object.entries(value)) {
    const r = checkKeys(ref, KEYS.secretKeyRef, `${path}.${name}`);
    if (typeof r.name !== 'string' || typeof r.key !== 'string') throw new ManifestError(`${path}.${name}: expected {name: SECRET, key: KEY}, a key of a Secret of the namespace`);
  }
}

function parseWorkload(doc: Record<string, unknown>, at: string): WorkloadSpec {
  checkKeys(doc, KEYS.Workload, at);
  const podSets = doc.podSets;
  if (!Array.isArray(podSets)) throw new ManifestError(`${at}.podSets: expected a list of pod sets`);
  podSets.forEach((ps, i) => {
    const p = `${at}.podSets[${i}]`;
    const set = checkKeys(ps, KEYS.podSet, p);
    if (set.resources !== undefined) checkResources(set.resources, `${p}.resources`);
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

/**
 * A ModelDeployment document: the spec's fields in camelCase. `engine` may be just the engine's
 * name; a role's `role`, `replicas` and `size` default to "server", 1 and 1.
 */
function parseModelDeployment(doc: Record<string, unknown>, at: string): ModelDeploymentSpec {
  checkKeys(doc, KEYS.ModelDeployment, at);
  checkString(doc.artifact, `${at}.artifact`);
  const hasArtifact = typeof doc.artifact === 'string' && doc.artifact !== '';
  // With an artifact the engine loads the node cache's copy: the model may be left out.
  if (!(hasArtifact && doc.model === undefined) && (typeof doc.model !== 'string' || doc.model.trim() === '')) {
    throw new ManifestError(`${at}.model: expected a model path or reference, e.g. /models/llama-3.1-8b (or leave it out and name an artifact)`);
  }
  const engine = typeof doc.engine === 'string' ? { engine: doc.engine } : doc.engine;
  if (engine !== undefined) {
    const e = checkKeys(engine, KEYS.engine, `${at}.engine`);
    checkOneOf(e.engine, ENGINE_KINDS, `${at}.engine.engine`);
    checkOneOf(e.mode, ENGINE_MODES, `${at}.engine.mode`);
    checkString(e.version, `${at}.engine.version`);
    checkString(e.customCommand, `${at}.engine.customCommand`);
    checkList(e.extraArgs, `${at}.engine.extraArgs`, 'arguments');
    if (e.speculative !== undefined) {
      const sp = checkKeys(e.speculative, KEYS.speculative, `${at}.engine.speculative`);
      checkOneOf(sp.method, SPECULATIVE_METHODS, `${at}.engine.speculative.method`);
    }
    if (e.kvOffload !== undefined) checkKeys(e.kvOffload, KEYS.kvOffload, `${at}.engine.kvOffload`);
    checkEnvFromSecret(e.envFromSecret, `${at}.engine.envFromSecret`);
  }
  if (!Array.isArray(doc.roles) || doc.roles.length === 0) {
    throw new ManifestError(`${at}.roles: expected a list of roles, e.g. [{role: server, replicas: 1, resources: {accelerator: {whole: 1}, vcpu: 8, memoryMib: 65536}}]`);
  }
  const roles = doc.roles.map((raw, i) => {
    const p = `${at}.roles[${i}]`;
    const r = checkKeys(raw, KEYS.role, p);
    checkOneOf(r.role, ENGINE_ROLES, `${p}.role`);
    if (r.resources !== undefined) checkResources(r.resources, `${p}.resources`);
    if (r.topology !== undefined) checkKeys(r.topology, KEYS.topology, `${p}.topology`);
    checkList(r.extraArgs, `${p}.extraArgs`, 'arguments');
    checkEnvFromSecret(r.envFromSecret, `${p}.envFromSecret`);
    return { role: 'server', replicas: 1, size: 1, ...r };
  });
  const { kind: _kind, ...rest } = doc;
  return ModelDeploymentSpec.fromJSON({ namespace: 'default', localQueue: 'default', ...rest, engine, roles });
}

/**
 * A GPUInstance document: the spec's fields in camelCase. `sshPublicKeys` may be left out;
 * `gpufleet submit` then adds the submitter's default public key.
 */
function parseGPUInstance(doc: Record<string, unknown>, at: string): GPUInstanceSpec {
  checkKeys(doc, KEYS.GPUInstance, at);
  if (doc.resources !== undefined) checkResources(doc.resources, `${at}.resources`);
  checkList(doc.sshPublicKeys, `${at}.sshPublicKeys`, 'OpenSSH public key lines');
  checkString(doc.command, `${at}.command`);
  checkEnvFromSecret(doc.envFromSecret, `${at}.envFromSecret`);
  if (doc.stop !== undefined && typeof doc.stop !== 'boolean') throw new ManifestError(`${at}.stop: expected true or false, got ${JSON.stringify(doc.stop)}`);
  const { kind: _kind, ...rest } = doc;
  return GPUInstanceSpec.fromJSON({ namespace: 'default', localQueue: 'default', ...rest });
}

/** Parses a (multi-document) YAML manifest of Workloads, ClusterQueues, LocalQueues, ModelDeployments and GPUInstances. */
export function parseManifests(text: string, source: string): Manifest[] {
  const out: Manifest[] = [];
  parseAllDocuments(text).forEach((d, i) => {
    const at = `${source}#${i + 1}`;
    if (d.errors.length > 0) throw new ManifestError(`${at}: ${d.errors[0].message}`);
    const doc = d.toJS() as unknown;
    if (doc === null || doc === undefined) return;
    if (typeof doc !== 'object' || Array.isArray(doc)) throw new ManifestError(`${at}: expected a mapping`);
    const obj = doc as Record<string, unknown>;
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
      case 'ModelDeployment':
        out.push({ kind: 'ModelDeployment', spec: parseModelDeployment(obj, at) });
        break;
      case 'GPUInstance':
        out.push({ kind: 'GPUInstance', spec: parseGPUInstance(obj, at) });
        break;
      default:
        throw new ManifestError(`${at}.kind: expected one of ${KINDS.join(', ')}, got ${JSON.stringify(obj.kind)}`);
    }
  });
  if (out.length === 0) throw new ManifestError(`${source}: no documents`);
  return out;
}
