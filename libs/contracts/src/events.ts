import {
  DeploymentEvent,
  DetectionFailed,
  InstanceEvent,
  InstanceTypeChanged,
  NodeHeartbeat,
  NodeInventory,
  NodeStatusChanged,
  UsageEvent,
  WorkloadEvent,
} from './generated';

/** Encode/decode pair every generated message has; events travel as proto3 canonical JSON. */
export interface JsonCodec<T> {
  toJSON(message: T): unknown;
  fromJSON(object: unknown): T;
}

/**
 * One event kind: where it is published and what it carries. Subjects are
 * `gpufleet.<cluster>.<domain>.<name>` so `gpufleet.*.devices.>` style wildcards work.
 */
export interface EventDefinition<T> {
  readonly domain: string;
  readonly name: string;
  readonly version: number;
  readonly codec: JsonCodec<T>;
  /** Value of the `gpufleet-event` header, e.g. `devices.inventory.v1`. */
  readonly type: string;
  /**
   * For events about one node: the node, appended to the subject
   * (`gpufleet.<cluster>.devices.heartbeat.<node>`), so that a node's NATS identity may publish
   * only its own (docs/security.md) and subscribers drop an event whose payload names another.
   */
  scopeOf?(payload: T): string;
}

/**
 * `codec` is looked up when first used, not here: the generated messages load on first use in
 * the build (generated/index.ts), and `Events` names every message kind of every service.
 */
function defineEvent<T>(domain: string, name: string, version: number, codec: () => JsonCodec<T>, scopeOf?: (payload: T) => string): EventDefinition<T> {
  return {
    domain,
    name,
    version,
    scopeOf,
    type: `${domain}.${name}.v${version}`,
    get codec() {
      return codec();
    },
  };
}

/** Every event gpufleet publishes. Documented in docs/events.md; nobody writes a subject by hand. */
export const Events = {
  /** A node's full inventory, at agent start and whenever it changes. */
  inventory: defineEvent('devices', 'inventory', 1, () => NodeInventory, (p) => p.nodeName),
  /** Liveness beat from a node's agent (every 15 s by default). */
  heartbeat: defineEvent('devices', 'heartbeat', 1, () => NodeHeartbeat, (p) => p.nodeName),
  /** A provider's detection pass failed; the last good inventory is kept. */
  detectionFailed: defineEvent('devices', 'detection_failed', 1, () => DetectionFailed, (p) => p.nodeName),
  /** A node turned Ready or NotReady. */
  nodeStatusChanged: defineEvent('nodes', 'status_changed', 1, () => NodeStatusChanged),
  /** An InstanceType appeared, changed capacity, or disappeared. */
  instanceTypeChanged: defineEvent('capacity', 'instancetype_changed', 1, () => InstanceTypeChanged),
  /** A workload was accepted into its LocalQueue (validated, pending). */
  workloadSubmitted: defineEvent('workloads', 'submitted', 1, () => WorkloadEvent),
  /** Quota (credits) was reserved for a workload; placement follows. */
  workloadQuotaReserved: defineEvent('workloads', 'quota_reserved', 1, () => WorkloadEvent),
  /** A workload was placed and its devices committed to the ledger. */
  workloadAdmitted: defineEvent('workloads', 'admitted', 1, () => WorkloadEvent),
  /** An admitted workload was evicted to make room (reason says by whom and why). */
  workloadPreempted: defineEvent('workloads', 'preempted', 1, () => WorkloadEvent),
  /** A workload finished or was deleted; its devices and quota were released. */
  workloadFinished: defineEvent('workloads', 'finished', 1, () => WorkloadEvent),
  /** A model deployment changed phase or ready-replica count. */
  deploymentStatusChanged: defineEvent('deployments', 'status_changed', 1, () => DeploymentEvent),
  /** A GPU instance changed phase (or got its SSH endpoint). */
  instanceStatusChanged: defineEvent('instances', 'status_changed', 1, () => InstanceEvent),
  /** Token usage of the requests an inference-router replica finished (batched, about once a second). */
  usage: defineEvent('router', 'usage', 1, () => UsageEvent),
} as const;

export type EventName = keyof typeof Events;
export type PayloadOf<E> = E extends EventDefinition<infer T> ? T : never;

const TOKEN = /^[a-z0-9][a-z0-9_-]*$/;

/** Cluster names become subject tokens and bucket names: lower case letters, digits, '-' and '_'. */
export function assertClusterName(cluster: string): void {
  if (!TOKEN.test(cluster) || cluster.length > 63) {
    throw new Error(
      `cluster name "${cluster}" is invalid: expected 1-63 lower-case letters, digits, '-' or '_', starting with a letter or digit`,
    );
  }
}

/** Where subscribers of one event kind listen: `gpufleet.<cluster>.<domain>.<name>`, with `.>` (every node) for a node-scoped kind. */
export function subjectOf<T>(def: EventDefinition<T>, cluster: string): string {
  assertClusterName(cluster);
  return `gpufleet.${cluster}.${def.domain}.${def.name}${def.scopeOf ? '.>' : ''}`;
}

/** `gpufleet.*.<domain>.<name>` (`.>` for a node-scoped kind): one event kind of every cluster, to subscribe to. */
export function everyClusterSubjectOf<T>(def: EventDefinition<T>): string {
  return `gpufleet.*.${def.domain}.${def.name}${def.scopeOf ? '.>' : ''}`;
}

/** A node (or other scope) as the last tokens of a subject: a valid NATS subject part, no wildcards. */
const SCOPE = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

/** The subject of one scope (node) of a node-scoped kind: what that node's identity may publish. */
export function scopedSubjectOf<T>(def: EventDefinition<T>, cluster: string, scope: string): string {
  assertClusterName(cluster);
  if (!def.scopeOf) throw new Error(`event ${def.type} is not scoped by node`);
  if (!SCOPE.test(scope)) throw new Error(`event ${def.type}: ${JSON.stringify(scope)} cannot be a subject scope (letters, digits, '-', '_', '.'-separated)`);
  return `gpufleet.${cluster}.${def.domain}.${def.name}.${scope}`;
}

/** Where one event is published: its kind's subject, with the payload's node for a node-scoped kind. */
export function publishSubjectOf<T>(def: EventDefinition<T>, cluster: string, payload: T): string {
  if (def.scopeOf) return scopedSubjectOf(def, cluster, def.scopeOf(payload));
  return subjectOf(def, cluster);
}

/** The scope (node) a subject of a node-scoped kind names, for checking it against the payload. */
export function scopeOfSubject<T>(def: EventDefinition<T>, subject: string): string {
  const prefix = `.${def.domain}.${def.name}.`;
  const at = subject.indexOf(prefix);
  return at < 0 ? '' : subject.slice(at + prefix.length);
}

/**
 * A subject whose payload is plain JSON described by a TypeScript type rather than a proto
 * message, with the same `gpufleet-event`, `gpufleet-id` and `traceparent` headers as `Events`.
 */
export interface RawSubjectDefinition {
  readonly domain: string;
  readonly name: string;
  readonly version: number;
  /** Value of the `gpufleet-event` header, e.g. `kv.events.v1`. */
  readonly type: string;
}

function defineRawSubject(domain: string, name: string, version: number): RawSubjectDefinition {
  return { domain, name, version, type: `${domain}.${name}.v${version}` };
}

/** Subjects outside `Events` (their payloads are not proto messages). Documented in docs/events.md. */
export const RawSubjects = {
  /**
   * An engine replica's KV-cache events (vLLM's BlockStored / BlockRemoved / AllBlocksCleared),
   * one `KvEventBatch` (kv-cache-events.ts) per message, on `kvCacheEventsSubject(cluster, replica)`.
   */
  kvCacheEvents: defineRawSubject('kv', 'events', 1),
} as const;

/** A replica name as a subject token: letters, digits, '_' and '-', at most 128 characters (engine-sim's REPLICA_NAME). */
const REPLICA_TOKEN = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * `gpufleet.<cluster>.kv.events.<replica>`: where one engine replica publishes its KV-cache
 * events; `replica` `*` subscribes to every replica of the cluster. Five tokens, so the
 * GPUFLEET_EVENTS stream (`gpufleet.*.*.*`) does not retain this high-volume traffic.
 */
export function kvCacheEventsSubject(cluster: string, replica: string): string {
  assertClusterName(cluster);
  if (replica !== '*' && !REPLICA_TOKEN.test(replica)) {
    throw new Error(`replica name "${replica}" is invalid: expected 1-128 letters, digits, '_' or '-' (one NATS subject token), or '*' for every replica`);
  }
  const def = RawSubjects.kvCacheEvents;
  return `gpufleet.${cluster}.${def.domain}.${def.name}.${replica}`;
}

/** Subjects retained by the GPUFLEET_EVENTS stream (all clusters, all domains). */
export const EVENTS_STREAM = 'GPUFLEET_EVENTS';
/**
 * Four tokens for cluster-wide kinds, and the node-scoped device events below their node (no
 * overlap). Other deeper subjects (the engines' KV-cache events) stay out: they are high-volume
 * and replica-local.
 */
export const EVENTS_STREAM_SUBJECTS = ['gpufleet.*.*.*', 'gpufleet.*.devices.*.>'];

/** JetStream key-value buckets holding state of record, one set per cluster. */
export const Buckets = {
  /** Node records written by device-discovery agents, keyed by node name. */
  nodes: (cluster: string) => bucketName(cluster, 'nodes'),
  /** Node phase (Ready/NotReady) written by the scheduler, keyed by node name. */
  nodeStatus: (cluster: string) => bucketName(cluster, 'node-status'),
  /** Pool name → identity, written by the scheduler so pool names survive restarts. */
  pools: (cluster: string) => bucketName(cluster, 'pools'),
  /** Workloads (spec + status), keyed "<namespace>.<name>". */
  workloads: (cluster: string) => bucketName(cluster, 'workloads'),
  /** The devices ledger: per node, which device is held by which workload (CAS-written). */
  ledger: (cluster: string) => bucketName(cluster, 'ledger'),
  clusterQueues: (cluster: string) => bucketName(cluster, 'clusterqueues'),
  /** LocalQueues, keyed "<namespace>.<name>". */
  localQueues: (cluster: string) => bucketName(cluster, 'localqueues'),
  /** ModelDeployments (spec + status), keyed "<namespace>.<name>". */
  deployments: (cluster: string) => bucketName(cluster, 'deployments'),
  /** GPUInstances (spec + status), keyed "<namespace>.<name>". */
  instances: (cluster: string) => bucketName(cluster, 'instances'),
  /** Pods as node runtimes see them, keyed "<node>.<namespace>.<workload>.<pod_set>.<replica>.<pod>"; one writer per node. */
  pods: (cluster: string) => bucketName(cluster, 'pods'),
  /** What each node's runtime reports of itself (NodeRuntimeReport: sandboxed, sharing allowed), keyed by node name; one writer per node. */
  runtimes: (cluster: string) => bucketName(cluster, 'runtimes'),
  /** What each node's kubelet reports of gpufleet's devices (KubeletDevices: assigned, allocatable), keyed by node name; written by that node's agent. */
  kubeletDevices: (cluster: string) => bucketName(cluster, 'kubelet-devices'),
  /** API keys of the inference router (ApiKeyRecord, secret hashed), keyed by key id. */
  apiKeys: (cluster: string) => bucketName(cluster, 'api-keys'),
  /**
   * Secrets (Secret, values in plain JSON: JetStream encryption at rest is the operator's
   * option), keyed "<namespace>.<name>"; written by the scheduler's SecretService, read by node
   * runtimes when they start pods. One revision per key, so a replaced or deleted value is not kept.
   */
  secrets: (cluster: string) => bucketName(cluster, 'secrets'),
  /** ModelArtifacts (spec + status, the per-node copies left out), keyed "<namespace>.<name>"; written by model delivery's control role. */
  artifacts: (cluster: string) => bucketName(cluster, 'artifacts'),
  /** Resolved manifests (ArtifactManifest), keyed by the hex of their sha256 digest; written once each by the control role. */
  artifactManifests: (cluster: string) => bucketName(cluster, 'artifact-manifests'),
  /** Each node's copy of each artifact (ArtifactNodeStatus), keyed "<node>.<namespace>.<name>"; one writer per node (its cache). */
  artifactNodes: (cluster: string) => bucketName(cluster, 'artifact-nodes'),
  /** Leader leases, keyed by role (e.g. "scheduler"). */
  leases: (cluster: string) => bucketName(cluster, 'leases'),
  /** Users and service accounts (User), keyed by name; written by the scheduler's AccessService. */
  accessUsers: (cluster: string) => bucketName(cluster, 'access-users'),
  /** Access tokens (AccessTokenRecord, secret hashed), keyed by token id. */
  accessTokens: (cluster: string) => bucketName(cluster, 'access-tokens'),
  /** Role bindings (RoleBinding), keyed "<principal>.<role>.<namespace>". */
  accessBindings: (cluster: string) => bucketName(cluster, 'access-bindings'),
} as const;

function bucketName(cluster: string, what: string): string {
  assertClusterName(cluster);
  return `gpufleet-${cluster}-${what}`;
}
