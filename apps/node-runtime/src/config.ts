import { join, resolve } from 'path';
import { bool, ConfigOf, defineConfig, duration, int, list, servicePorts, sharedConfigFields, str } from '@gpufleet/config';
import { workspaceRoot } from '@gpufleet/process-kit';

/**
 * The workspace root: where `node -r reflect-metadata -r @swc-node/register` finds its preloads
 * and tsconfig. Searched upward, so it is the same from the sources and from the build (dist/apps/…).
 */
export const REPO_ROOT = workspaceRoot(__dirname);

/**
 * How simulated engines start by default: the built engine-sim next to a built runtime
 * (dist/apps/engine-sim/src/main.js, plain node), engine-sim's sources through swc otherwise.
 */
export const DEFAULT_ENGINE_SIM_COMMAND = __filename.endsWith('.js')
  ? `node -r reflect-metadata ${resolve(__dirname, '../../engine-sim/src/main.js')}`
  : `node -r reflect-metadata -r @swc-node/register ${join(REPO_ROOT, 'apps/engine-sim/src/main.ts')}`;

/** A DNS-1123 label: node names are one token of pods-bucket keys ("<node>.<namespace>.…"), so no dots. */
const NODE_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export const ENGINE_MODES = ['auto', 'simulated', 'real'] as const;
export const SANDBOX_MODES = ['auto', 'required', 'off'] as const;

export const nodeRuntimeConfigSchema = defineConfig({
  ...sharedConfigFields,
  ...servicePorts({ grpc: 50058, http: 8088 }),
  NODE_NAME: str({
    pattern: NODE_NAME,
    patternDesc: 'a DNS-1123 label (lower-case letters, digits and "-", at most 63 characters, no dots)',
    desc: 'Name of the node this runtime runs pods for: its key in the nodes and ledger buckets (the device-discovery agent’s NODE_NAME). With SIMULATED_NODES it names only the process (its NATS connection, the `node` label of its metrics).',
  }),
  SIMULATED_NODES: list({
    default: [],
    of: str({ pattern: NODE_NAME, patternDesc: 'a DNS-1123 label', desc: 'a node name' }),
    desc: 'Several nodes run by this one process (a simulated fleet, KWOK-style): comma-separated node names, each with its own pods, state directory (STATE_DIR/<node>) and pods-bucket records. Empty: the one node NODE_NAME.',
  }),
  STATE_DIR: str({
    optional: true,
    pattern: /^\/[^\0]*$/,
    patternDesc: 'an absolute path',
    desc: 'Where the runtime keeps its process state file, pod logs and GPU instance directories; it must survive runtime restarts. Default /var/lib/gpufleet/node-runtime/<NODE_NAME>. With SIMULATED_NODES, the parent of one directory per node (default /var/lib/gpufleet/node-runtime).',
  }),
  ADVERTISE_HOST: str({
    default: '127.0.0.1',
    pattern: /^[A-Za-z0-9.:[\]-]+$/,
    patternDesc: 'a host name or IP address',
    desc: 'Host written in pod status: where engines and instance SSH ports are reached, and the host of runtime_url. Engines and instances’ sshd listen on 127.0.0.1 when this is a loopback address, on every address otherwise.',
  }),
  ENGINE_MODE: str({
    default: 'auto',
    choices: ENGINE_MODES,
    desc: '"simulated" runs engine-sim in place of every engine, "real" the engine binaries; "auto" simulates on nodes whose inventory comes from the simulated provider.',
  }),
  ENGINE_SIM_COMMAND: str({
    default: DEFAULT_ENGINE_SIM_COMMAND,
    desc: 'How simulated engines start, split on whitespace (no quoting); "serve <model> --port …" is appended. Started in the workspace root.',
  }),
  STOP_GRACE_S: duration({ default: 30, min: 0, desc: 'How long a stopped pod’s processes get between SIGTERM and SIGKILL.' }),
  RESTART_BACKOFF_BASE_S: duration({ default: 1, min: 0.01, desc: 'Delay before the first restart of a crashed process; it doubles with every failure in a row.' }),
  RESTART_BACKOFF_CAP_S: duration({ default: 300, min: 0.01, desc: 'Longest delay between restarts.' }),
  HEALTH_PROBE_INTERVAL_S: duration({ default: 1, min: 0.05, desc: 'Seconds between health probes of an engine (GET /health).' }),
  SANDBOX: str({
    default: 'auto',
    choices: SANDBOX_MODES,
    desc: 'Pod sandboxes (bubblewrap namespaces, a uid of its own per pod, only its device nodes): "auto" sandboxes when the host can (root, bwrap, setpriv) and warns when it cannot, "required" refuses to start without, "off" runs pods as the runtime’s user, unconfined.',
  }),
  SANDBOX_UID_BASE: int({
    default: 200_000,
    min: 1_000,
    max: 4_294_000_000,
    desc: 'First uid of the range the runtime owns for sandboxed pods: a pod runs as SANDBOX_UID_BASE + its port (65536 uids). No account of the host may use the range.',
  }),
  SANDBOX_ALLOW_SHARING: bool({
    default: false,
    desc: 'The admin’s leave for pods of several namespaces to share this node although its pods run unconfined (SANDBOX=off, or a host that cannot sandbox). Without it the scheduler places one namespace’s pods at a time on such a node. No effect while pods run sandboxed.',
  }),
  SANDBOX_PIDS_MAX: int({
    default: 16_384,
    min: 16,
    desc: 'Most processes and threads one sandboxed pod process may have at once (its cgroup’s pids.max); its memory and CPU limits come from its request.',
  }),
});

export type NodeRuntimeConfig = ConfigOf<typeof nodeRuntimeConfigSchema.fields>;
export const NODE_RUNTIME_CONFIG = Symbol('NODE_RUNTIME_CONFIG');

/** SIMULATED_NODES as the helpers below read it: absent means one node. */
type SimulatedNodes = { readonly SIMULATED_NODES?: readonly string[] };

const DEFAULT_STATE_ROOT = '/var/lib/gpufleet/node-runtime';

/** The nodes this process runs pods for: SIMULATED_NODES (duplicates dropped), or NODE_NAME alone. */
export function nodeNamesOf(config: Pick<NodeRuntimeConfig, 'NODE_NAME'> & SimulatedNodes): string[] {
  return config.SIMULATED_NODES?.length ? [...new Set(config.SIMULATED_NODES)] : [config.NODE_NAME];
}

/** True when this process stands in for several (simulated) nodes. */
export function isMultiNode(config: SimulatedNodes): boolean {
  return (config.SIMULATED_NODES?.length ?? 0) > 0;
}

/** Where `node`'s state lives: STATE_DIR itself for a one-node runtime, STATE_DIR/<node> with SIMULATED_NODES. */
export function stateDirOf(config: Pick<NodeRuntimeConfig, 'STATE_DIR' | 'NODE_NAME'> & SimulatedNodes, node: string = config.NODE_NAME): string {
  if (isMultiNode(config)) return join(config.STATE_DIR ?? DEFAULT_STATE_ROOT, node);
  return config.STATE_DIR ?? join(DEFAULT_STATE_ROOT, config.NODE_NAME);
}

/** ENGINE_SIM_COMMAND as a program and its arguments. */
export function engineSimEntry(config: Pick<NodeRuntimeConfig, 'ENGINE_SIM_COMMAND'>): { command: string; args: string[] } {
  const [command, ...args] = config.ENGINE_SIM_COMMAND.trim().split(/\s+/);
  return { command, args };
}

/**
 * `http://<ADVERTISE_HOST>:<HTTP_PORT>`, with IPv6 addresses bracketed; a runtime of several
 * nodes serves each under `/nodes/<node>`, so a pod's runtime_url names its node's endpoint
 * even while the same pod moves between two nodes of the process.
 */
export function runtimeUrlOf(config: Pick<NodeRuntimeConfig, 'ADVERTISE_HOST' | 'HTTP_PORT'> & SimulatedNodes, node?: string): string {
  const host = config.ADVERTISE_HOST.includes(':') && !config.ADVERTISE_HOST.startsWith('[') ? `[${config.ADVERTISE_HOST}]` : config.ADVERTISE_HOST;
  const base = `http://${host}:${config.HTTP_PORT}`;
  return isMultiNode(config) && node !== undefined ? `${base}/nodes/${node}` : base;
}

/** Engines and sshd must be reachable where pod status says they are: loopback only when the advertised host is. */
export function instanceListenAddress(config: Pick<NodeRuntimeConfig, 'ADVERTISE_HOST'>): string {
  return /^(127\.|localhost$|::1$|\[::1\]$)/.test(config.ADVERTISE_HOST) ? '127.0.0.1' : '0.0.0.0';
}
