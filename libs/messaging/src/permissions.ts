import { Buckets, EVENTS_STREAM, Events, scopedSubjectOf, subjectOf, type EventDefinition } from '@gpufleet/contracts';

/**
 * Who a NATS identity is, as far as its permissions go. One identity per process: an agent or a
 * node runtime process may present several (simulated) nodes, and its identity covers exactly
 * those; `'*'` is every node (a DaemonSet of agents sharing one credential, as Helm installs).
 */
export type NatsIdentitySpec =
  | { component: 'control' }
  | { component: 'router' }
  | { component: 'agent'; nodes: readonly string[] | '*' }
  | { component: 'runtime'; nodes: readonly string[] | '*' }
  /**
   * Model delivery: `control` is its control role (resolves artifacts; owns the artifact
   * buckets), `nodes` the node caches the process runs ([] for a control-only process).
   */
  | { component: 'delivery'; control: boolean; nodes: readonly string[] | '*' };

export type NatsComponent = NatsIdentitySpec['component'];

export interface SubjectRules {
  allow: string[];
  deny: string[];
}

/** A user's `permissions` block of the nats-server configuration. */
export interface NatsPermissions {
  publish: SubjectRules;
  subscribe: SubjectRules;
}

/**
 * The reply subjects of one identity. Clients with an nkey use `_INBOX.<public key>` as their
 * inbox prefix (natsConnectionOptions), so an identity may subscribe to its own replies only and
 * never reads another's (the router's api-keys watch, say) by subscribing to `_INBOX.>`.
 */
export function inboxPrefixOf(publicKey: string): string {
  return `_INBOX.${publicKey}`;
}

/** The stream behind a KV bucket. */
function kvStream(bucket: string): string {
  return `KV_${bucket}`;
}

/**
 * What reading a bucket takes (KvStore.get/keys/watch, KvMirror): its stream's info, direct and
 * stream message gets, ordered consumers (nats.js names them: CREATE.<stream>.<name>.<filter>)
 * and their flow-control replies. None of these writes the bucket.
 */
export function readBucketSubjects(bucket: string): string[] {
  const s = kvStream(bucket);
  return [
    `$JS.API.STREAM.INFO.${s}`,
    `$JS.API.DIRECT.GET.${s}`,
    `$JS.API.DIRECT.GET.${s}.>`,
    `$JS.API.STREAM.MSG.GET.${s}`,
    `$JS.API.CONSUMER.CREATE.${s}`,
    `$JS.API.CONSUMER.CREATE.${s}.>`,
    `$JS.FC.${s}.>`,
  ];
}

/** A KV write (put, create, update, delete, purge of a key) is a publish to `$KV.<bucket>.<key>`. */
export function writeKeySubject(bucket: string, key: string): string {
  return `$KV.${bucket}.${key}`;
}

/**
 * What no identity but the control plane may do to any stream, denied outright so that no
 * allow rule, present or future, can grant it: a deny wins over every allow in nats-server.
 */
const STREAM_ADMIN_DENY = [
  '$JS.API.STREAM.DELETE.>',
  '$JS.API.STREAM.PURGE.>',
  '$JS.API.STREAM.UPDATE.>',
  '$JS.API.STREAM.MSG.DELETE.>',
  '$JS.API.STREAM.RESTORE.>',
  '$JS.API.CONSUMER.DELETE.>',
  '$JS.API.CONSUMER.DURABLE.CREATE.>',
  '$JS.API.ACCOUNT.PURGE.>',
  '$JS.API.SERVER.>',
  '$JS.API.META.>',
];

/** Every identity: the account's JetStream check (jetstreamManager) and the events stream's info (ensureEventsStream). */
const BASE_PUBLISH = ['$JS.API.INFO', `$JS.API.STREAM.INFO.${EVENTS_STREAM}`];

function nodeKeys(nodes: readonly string[] | '*', suffix: string): string[] {
  return nodes === '*' ? [`*${suffix}`] : nodes.map((n) => `${n}${suffix}`);
}

/**
 * Least-privilege permissions of a component on one cluster (docs/security.md has them as a
 * table). Buckets are created by their owner: the control plane (scheduler) creates the events
 * stream and every bucket but api-keys, which the router, the identity that manages keys,
 * creates; the other identities wait for them (KvStore.open) and create nothing.
 */
export function natsPermissions(spec: NatsIdentitySpec, cluster: string, publicKey: string): NatsPermissions {
  const apiKeys = Buckets.apiKeys(cluster);
  /** Every identity but the control plane: what it publishes, no stream administration, its own replies. */
  const limited = (publish: string[]): NatsPermissions => ({
    publish: { allow: [...BASE_PUBLISH, ...publish], deny: STREAM_ADMIN_DENY },
    subscribe: { allow: [`${inboxPrefixOf(publicKey)}.>`], deny: [] },
  });
  switch (spec.component) {
    case 'control':
      // The control plane writes everything of record except API keys: only the router's
      // KeyService mints them, so a compromised scheduler cannot add a key the router trusts.
      return {
        publish: {
          allow: ['>'],
          deny: [writeKeySubject(apiKeys, '>'), `$JS.API.STREAM.CREATE.${kvStream(apiKeys)}`, `$JS.API.STREAM.UPDATE.${kvStream(apiKeys)}`],
        },
        subscribe: { allow: ['>'], deny: [] },
      };
    case 'router':
      return limited([
        ...readBucketSubjects(Buckets.deployments(cluster)),
        ...readBucketSubjects(apiKeys),
        // Who may call KeyService: users, tokens and role bindings (written by the scheduler's AccessService).
        ...[Buckets.accessUsers(cluster), Buckets.accessTokens(cluster), Buckets.accessBindings(cluster)].flatMap(readBucketSubjects),
        `$JS.API.STREAM.CREATE.${kvStream(apiKeys)}`,
        writeKeySubject(apiKeys, '>'),
        subjectOf(Events.usage, cluster),
      ]);
    case 'agent': {
      const nodes = Buckets.nodes(cluster);
      return limited([
        // Its own records only; reading a record (the last generation) is harmless.
        ...readBucketSubjects(nodes),
        ...nodeKeys(spec.nodes, '').map((k) => writeKeySubject(nodes, k)),
        // What its nodes' kubelets assigned (pod-resources), keyed by node name as well.
        ...readBucketSubjects(Buckets.kubeletDevices(cluster)),
        ...nodeKeys(spec.nodes, '').map((k) => writeKeySubject(Buckets.kubeletDevices(cluster), k)),
        // Device events of its own nodes only: the subject names the node (scopedSubjectOf).
        ...([Events.inventory, Events.heartbeat, Events.detectionFailed] as Array<EventDefinition<unknown>>).flatMap((def) =>
          spec.nodes === '*' ? [subjectOf(def, cluster)] : spec.nodes.map((n) => scopedSubjectOf(def, cluster, n)),
        ),
      ]);
    }
    case 'runtime': {
      const pods = Buckets.pods(cluster);
      return limited([
        // Secrets: the values of the env_from_secret references of the pods it starts.
        ...[Buckets.nodes(cluster), Buckets.ledger(cluster), Buckets.workloads(cluster), pods, Buckets.secrets(cluster)].flatMap(readBucketSubjects),
        // Pod keys start with the node's name (podStoreKey): its own nodes' pods only.
        ...nodeKeys(spec.nodes, '.>').map((k) => writeKeySubject(pods, k)),
        // Its own nodes' runtime reports (sandboxed or not): keyed by node name.
        ...readBucketSubjects(Buckets.runtimes(cluster)),
        ...nodeKeys(spec.nodes, '').map((k) => writeKeySubject(Buckets.runtimes(cluster), k)),
        // Model weights: an engine pod naming an artifact starts once its node's copy is Ready.
        ...[Buckets.artifacts(cluster), Buckets.artifactNodes(cluster)].flatMap(readBucketSubjects),
      ]);
    }
    case 'delivery': {
      const artifacts = Buckets.artifacts(cluster);
      const manifests = Buckets.artifactManifests(cluster);
      const copies = Buckets.artifactNodes(cluster);
      const control = spec.control
        ? [
            // It owns the artifact buckets: creates them and writes artifacts and manifests.
            ...[artifacts, manifests, copies].map((b) => `$JS.API.STREAM.CREATE.${kvStream(b)}`),
            writeKeySubject(artifacts, '>'),
            writeKeySubject(manifests, '>'),
            // Who may call ModelDeliveryService, as the router reads it for KeyService.
            ...[Buckets.accessUsers(cluster), Buckets.accessTokens(cluster), Buckets.accessBindings(cluster)].flatMap(readBucketSubjects),
            ...readBucketSubjects(Buckets.leases(cluster)),
            writeKeySubject(Buckets.leases(cluster), 'model-delivery'),
          ]
        : [];
      const caches =
        spec.nodes === '*' || spec.nodes.length > 0
          ? [
              // What its nodes' pods need (workloads on the ledger) and its own nodes' copies.
              ...[Buckets.nodes(cluster), Buckets.ledger(cluster), Buckets.workloads(cluster)].flatMap(readBucketSubjects),
              ...nodeKeys(spec.nodes, '.>').map((k) => writeKeySubject(copies, k)),
            ]
          : [];
      return limited([
        // Both roles read the artifacts, their manifests and every node's copies (peers), and
        // the hub tokens named by tokenFromSecret.
        ...[artifacts, manifests, copies, Buckets.secrets(cluster)].flatMap(readBucketSubjects),
        ...control,
        ...caches,
      ]);
    }
  }
}

export interface NatsUser {
  /** The user's nkey public key (U…): the server holds no secret. */
  nkey: string;
  permissions: NatsPermissions;
}

/**
 * The `authorization` block of a nats-server configuration (2.9 syntax). The configuration
 * format is a superset of JSON, and JSON strings are taken literally: `$KV…` and `$JS…` would be
 * variable references if unquoted.
 */
export function natsAuthorizationConfig(users: readonly NatsUser[]): string {
  const block = {
    users: users.map((u) => ({
      nkey: u.nkey,
      permissions: {
        publish: rules(u.permissions.publish),
        subscribe: rules(u.permissions.subscribe),
      },
    })),
  };
  return `authorization: ${JSON.stringify(block, null, 2)}\n`;
}

function rules(r: SubjectRules): { allow: string[]; deny?: string[] } {
  return r.deny.length > 0 ? { allow: r.allow, deny: r.deny } : { allow: r.allow };
}
