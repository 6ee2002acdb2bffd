import { bool, ConfigOf, defineConfig, duration, int, list, servicePorts, sharedConfigFields, str, url } from '@gpufleet/config';

export const DELIVERY_ROLES = ['control', 'node', 'all'] as const;

export const deliveryConfigSchema = defineConfig(
  {
    ...sharedConfigFields,
    ...servicePorts({ grpc: 50057, http: 8087 }),
    ROLE: str({
      default: 'control',
      choices: DELIVERY_ROLES,
      desc: 'What this process does: "control" (ModelDeliveryService: resolves ModelArtifacts to manifests, one leader per cluster), "node" (the node cache of NODE_NAMES) or "all" (both, as in `gpufleet up`).',
    }),
    HF_ENDPOINT: url({
      default: 'https://huggingface.co',
      protocols: ['http', 'https'],
      desc: 'The Hugging Face hub an artifact without its own `source.endpoint` is resolved against: a mirror or an air-gapped hub works the same.',
    }),
    MODELSCOPE_ENDPOINT: url({
      default: 'https://www.modelscope.cn',
      protocols: ['http', 'https'],
      desc: 'The ModelScope hub an artifact without its own `source.endpoint` is resolved against.',
    }),
    RESOLVE_TIMEOUT_S: duration({ default: 30, min: 1, desc: 'Seconds one request to a hub may take while an artifact is resolved; past it the source counts as unavailable.' }),
    REVALIDATE_S: duration({
      default: 3600,
      min: 1,
      desc: 'Seconds between revalidations of a resolved artifact against its source; a failure marks it Degraded and keeps its manifest.',
    }),
    RETRY_S: duration({ default: 60, min: 0.1, desc: 'Seconds before a resolution that failed because the source was unavailable is tried again.' }),
    MAX_MANIFEST_FILES: int({ default: 10_000, min: 1, max: 100_000, desc: 'Files one artifact may hold; a repository with more is refused (narrow it with allowPatterns).' }),
    WATCH_MAX_BUFFERED: int({
      default: 10_000,
      min: 1,
      desc: 'Messages WatchArtifacts may have waiting for a client that reads too slowly (beyond its initial snapshot); past it the watch ends with RESOURCE_EXHAUSTED.',
    }),
    NODE_NAMES: list({
      default: [],
      minItems: 0,
      of: str({ pattern: /^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/, patternDesc: 'a node name (DNS-1123 subdomain)', desc: 'a node' }),
      desc: 'Node role: the nodes whose caches this process keeps (one cache directory each under CACHE_DIR); a DaemonSet pod names its own node.',
    }),
    CACHE_DIR: str({ default: '/var/lib/gpufleet/model-cache', desc: 'Node role: where the caches live, one directory per node (<CACHE_DIR>/<node>): blobs, trees, the Hugging Face view.' }),
    CACHE_CAPACITY_GIB: int({ default: 0, min: 0, desc: "Node role: GiB each node's cache may use; 0: the size of CACHE_DIR's filesystem." }),
    CACHE_HIGH_WATERMARK_PERCENT: int({ default: 80, min: 1, max: 100, desc: 'Node role: above this share of the capacity, unused trees are evicted (least recently used first).' }),
    CACHE_LOW_WATERMARK_PERCENT: int({ default: 70, min: 1, max: 100, desc: 'Node role: eviction frees space down to this share of the capacity.' }),
    LOCAL_SOURCE_ROOTS: list({
      default: [],
      minItems: 0,
      of: str({ pattern: /^\/(?!.*(^|\/)\.\.?(\/|$)).*$/, patternDesc: 'an absolute path without "." or ".." segments', desc: 'a directory' }),
      desc: 'Node role: directories (shared storage mounted at the same path on every node, e.g. NFS) whose files node caches copy for LOCAL artifacts; a LOCAL artifact elsewhere fails with InvalidManifest. Empty: LOCAL artifacts are not fetched.',
    }),
    CACHE_HF_LAYOUT: bool({ default: true, desc: 'Node role: also lay hub artifacts out as a Hugging Face cache (models--org--name/snapshots/<commit>), for engines given HF_HUB_CACHE and HF_HUB_OFFLINE=1.' }),
    DOWNLOAD_STREAMS: int({ default: 8, min: 1, max: 64, desc: 'Node role: ranged requests in flight per download.' }),
    DOWNLOAD_BANDWIDTH_MIBPS: int({ default: 0, min: 0, desc: "Node role: a cap on each node's download rate, MiB/s; 0: none." }),
    DOWNLOAD_STALL_TIMEOUT_S: duration({ default: 30, min: 0.1, desc: 'Node role: a request that brings no byte for this long is retried.' }),
    DOWNLOAD_BACKOFF_MIN_S: duration({ default: 60, min: 0.01, desc: 'Node role: wait after a failed request to a source, doubling per failure.' }),
    DOWNLOAD_BACKOFF_MAX_S: duration({ default: 3600, min: 0.01, desc: 'Node role: the longest wait between two requests to a failing source.' }),
    PEER_TOKEN: str({
      optional: true,
      secret: true,
      pattern: /^.{16,}$/,
      patternDesc: 'a secret of at least 16 characters',
      desc: 'Node role: the bearer token node caches show each other to fetch verified blobs (the same on every node); unset: no peer sync, every node fetches from the origin.',
    }),
    PEER_PORT: int({ default: 0, min: 0, max: 65535, desc: "Node role: port of each node's peer server (verified blobs, Range); 0: any free port (several nodes in one process), else this port for the first node and the next ones up." }),
    PEER_ADVERTISE_HOST: str({ default: '', desc: 'Node role: the address peers reach this node on; empty: HOST (loopback in a local stack).' }),
    LEADER_RENEW_S: duration({ default: 5, min: 0.1, desc: 'Seconds between renewals of the model-delivery leader lease (the control role resolves only while it holds it).' }),
    LEADER_EXPIRE_S: duration({ default: 10, min: 0.3, desc: 'Seconds a lease may go unrenewed before a standby control role takes over.' }),
  },
  [
    (c) =>
      c.CACHE_LOW_WATERMARK_PERCENT <= c.CACHE_HIGH_WATERMARK_PERCENT
        ? []
        : [{ variable: 'CACHE_LOW_WATERMARK_PERCENT', message: `must be at most CACHE_HIGH_WATERMARK_PERCENT (${c.CACHE_HIGH_WATERMARK_PERCENT}), got ${c.CACHE_LOW_WATERMARK_PERCENT}` }],
    (c) =>
      c.ROLE === 'control' || c.NODE_NAMES.length > 0
        ? []
        : [{ variable: 'NODE_NAMES', message: `must name at least one node when ROLE is ${c.ROLE}: the node role keeps those nodes' caches` }],
    (c) =>
      c.LEADER_RENEW_S < c.LEADER_EXPIRE_S
        ? []
        : [{ variable: 'LEADER_RENEW_S', message: `must be less than LEADER_EXPIRE_S (${c.LEADER_EXPIRE_S}): the lease would lapse between renewals, got ${c.LEADER_RENEW_S}` }],
  ],
);

export type DeliveryConfig = ConfigOf<typeof deliveryConfigSchema.fields>;
export const DELIVERY_CONFIG = Symbol('DELIVERY_CONFIG');
