// A kubelet simulator for tests: per simulated node it registers the Node, plays the kubelet's
// side of the device plugin API (DevicePluginKubelet) and publishes the plugins' healthy devices
// as capacity, watches the Pods bound to the node (spec.nodeName), admits them against the
// device capacity, calls Allocate, gives each Pod a loopback IP of its own and runs its
// `gpufleet/engine-sim` containers as local processes of the workspace's engine-sim and a GPU
// instance's `gpufleet/sshd` sidecar and `workload` container as local sshd and shell processes,
// probing readiness over HTTP or TCP and writing Pod status as the kubelet does. See
// docs/kubernetes-simulator.md.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, type WriteStream } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, Watch, type V1Container, type V1ContainerStatus, type V1Node, type V1Pod, type V1PodCondition, type V1PodStatus } from '@kubernetes/client-node';
import { freshServiceArgs, REPO_ROOT } from '@gpufleet/process-kit';
import { DevicePluginKubelet } from '../kubelet/device-plugin-kubelet';
import { PodResourcesKubelet } from '../kubelet/pod-resources-kubelet';
import type { KubeApiServer } from '../kube-apiserver';

export interface KubeletSimNode {
  readonly name: string;
  readonly labels?: Readonly<Record<string, string>>;
  /** The node's device-plugins directory (kubelet.sock is served there); a new temporary one by default. */
  readonly devicePluginDir?: string;
  /** The node's pod-resources directory; a new temporary one by default. */
  readonly podResourcesDir?: string;
  /** Node capacity; default 64 cpus and 512Gi. */
  readonly cpu?: string;
  readonly memory?: string;
}

export interface KubeletSimulatorOptions {
  /** The API server simulator, or a kubeconfig path. */
  readonly api: Pick<KubeApiServer, 'kubeConfig'> | string;
  readonly nodes: readonly KubeletSimNode[];
  /** How engine-sim starts; default the workspace's build (built when stale), run with this node. */
  readonly engineSim?: { readonly command: string; readonly args: readonly string[]; readonly cwd: string };
  /** Where container logs go (`<pod>_<container>.log`); a new temporary directory by default. */
  readonly logDir?: string;
  /** Pod IPs are `<podIpPrefix><n>` from n = 2; default `127.0.0.`. An address whose port is taken is skipped. */
  readonly podIpPrefix?: string;
  /** How often the Node's Ready condition is renewed; default 5000 ms. */
  readonly heartbeatMs?: number;
  /** Probes run at most this far apart (the Pod's periodSeconds is honoured when shorter); default 500 ms. */
  readonly probePeriodMs?: number;
  /** Restart backoff: this, doubling per restart, up to maxBackoffMs; default 200 ms and 5000 ms. */
  readonly backoffMs?: number;
  readonly maxBackoffMs?: number;
  /** SIGKILL after min(terminationGracePeriodSeconds, this); default 5000 ms. */
  readonly maxGraceMs?: number;
}

type ContainerState = 'waiting' | 'running' | 'terminated';

interface ContainerRun {
  readonly spec: V1Container;
  proc?: ChildProcess;
  state: ContainerState;
  reason?: string;
  message?: string;
  startedAt?: string;
  ready: boolean;
  started: boolean;
  restartCount: number;
  lastTerminated?: { exitCode: number; signal?: number; reason: string; startedAt?: string; finishedAt: string };
  exitCode?: number;
  backoffUntil?: number;
  probing: boolean;
  lastProbe: number;
  env: Record<string, string>;
  log?: WriteStream;
  /** How the simulator runs it: engine-sim, a local sshd (the instance sidecar), or the instance's command. */
  kind?: 'engine-sim' | 'sshd' | 'workload';
  /** The local user it runs as (the container's runAsUser when the simulator is root and the uid exists). */
  user?: { name: string; uid: number; gid: number };
}

interface PodRun {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  pod: V1Pod;
  ip?: string;
  phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed';
  reason?: string;
  message?: string;
  readonly startTime: string;
  containers: ContainerRun[];
  /** Devices held, by resource. */
  devices: Map<string, string[]>;
  written?: string;
  stopping?: Promise<void>;
  stopped: boolean;
}

const SIGNALS: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGSEGV: 11, SIGTERM: 15 };
const KUBELET_VERSION = 'v1.32.0-gpufleet-sim';
const BASE_RESOURCES = new Set(['cpu', 'memory', 'pods', 'ephemeral-storage']);
const ENGINE_SIM_IMAGE = /^(?:[^/]+\/)*gpufleet\/engine-sim(?::|@|$)/;
const SSHD_IMAGE = /^(?:[^/]+\/)*gpufleet\/sshd(?::|@|$)/;
/** The sidecar's sshd invocation (SSHD_SCRIPT): the simulator adds the pod IP as ListenAddress. */
const SSHD_EXEC = /\bexec\s+(\/usr\/sbin\/sshd)\s/;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms).unref());
const now = (): string => new Date().toISOString();
/** Every live child, killed when this process exits, so a failed test leaves none behind. */
const LIVE = new Set<ChildProcess>();
let exitHook = false;

function codeOf(err: unknown): number | undefined {
  const e = err as { code?: unknown; statusCode?: unknown };
  const code = e?.code ?? e?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

/** `addr:port` can be bound now (nothing else listens there). */
function bindable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

/** `addr:port` accepts TCP connections within `timeoutMs` (a tcpSocket probe). */
function connectable(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** The local account of `uid` (from /etc/passwd), if there is one. */
function accountOf(uid: number): { name: string; uid: number; gid: number } | undefined {
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const [name, , u, g] = line.split(':');
      if (name && Number(u) === uid) return { name, uid, gid: Number(g) };
    }
  } catch {
    // no passwd file: run as ourselves
  }
  return undefined;
}

/** The extended resources (device-plugin resources) a container asks for: limits, else requests. */
function deviceRequests(container: V1Container): Map<string, number> {
  const out = new Map<string, number>();
  const res = { ...(container.resources?.requests ?? {}), ...(container.resources?.limits ?? {}) } as Record<string, string>;
  for (const [name, value] of Object.entries(res)) {
    if (BASE_RESOURCES.has(name) || name.startsWith('hugepages-') || !name.includes('/')) continue;
    const n = Number(value);
    if (Number.isFinite(n) && n > 0) out.set(name, n);
  }
  return out;
}

/** The device ids the `gpufleet.io/devices` annotation names for `resource` (whole cards and MIG: UUIDs). */
function annotatedDevices(pod: V1Pod, resource: string): string[] {
  const raw = pod.metadata?.annotations?.['gpufleet.io/devices'];
  if (!raw) return [];
  try {
    const a = JSON.parse(raw) as { resource?: string; accelerators?: Array<{ uuid?: string }>; mig?: { uuid?: string } };
    if (a.resource !== resource) return [];
    if (a.mig?.uuid) return [a.mig.uuid];
    return (a.accelerators ?? []).map((x) => x.uuid ?? '').filter(Boolean);
  } catch {
    return [];
  }
}

class SimulatedNode {
  readonly pods = new Map<string, PodRun>();
  private heartbeat?: NodeJS.Timeout;
  private nodeStatusWritten = '';
  private lastHeartbeat = 0;
  private watchAbort?: AbortController;
  private watching = false;

  constructor(
    readonly spec: KubeletSimNode,
    readonly devicePlugins: DevicePluginKubelet,
    readonly podResources: PodResourcesKubelet,
    private readonly sim: KubeletSimulator,
  ) {}

  get name(): string {
    return this.spec.name;
  }

  /** Healthy devices per registered resource (0 for one registered before whose plugin is gone). */
  resources(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const r of this.devicePlugins.registrations) out.set(r.resourceName, []);
    for (const name of out.keys()) {
      const plugin = this.devicePlugins.plugin(name);
      out.set(name, plugin?.connected ? (plugin.devices ?? []).filter((d) => d.health === 'Healthy').map((d) => d.ID) : []);
    }
    return out;
  }

  nodeStatus(): V1Node['status'] {
    const capacity: Record<string, string> = { cpu: this.spec.cpu ?? '64', memory: this.spec.memory ?? '512Gi', pods: '110', 'ephemeral-storage': '1Ti' };
    for (const [name, ids] of this.resources()) capacity[name] = String(ids.length);
    const t = new Date(this.lastHeartbeat || Date.now()).toISOString() as unknown as Date;
    const condition = (type: string, status: string, reason: string, message: string) => ({ type, status, reason, message, lastHeartbeatTime: t, lastTransitionTime: this.sim.startedAt as unknown as Date });
    return {
      capacity,
      allocatable: { ...capacity },
      conditions: [
        condition('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
        condition('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
        condition('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
        condition('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status (gpufleet kubelet simulator)'),
      ],
      addresses: [
        { type: 'InternalIP', address: '127.0.0.1' },
        { type: 'Hostname', address: this.name },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        architecture: process.arch === 'x64' ? 'amd64' : process.arch,
        operatingSystem: 'linux',
        kubeletVersion: KUBELET_VERSION,
        kubeProxyVersion: KUBELET_VERSION,
        containerRuntimeVersion: 'gpufleet-sim://1',
        kernelVersion: '',
        osImage: 'gpufleet kubelet simulator',
        bootID: '',
        machineID: this.name,
        systemUUID: this.name,
      },
    };
  }

  async register(): Promise<void> {
    const labels = { 'kubernetes.io/hostname': this.name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', ...(this.spec.labels ?? {}) };
    try {
      const existing = await this.sim.core.readNode({ name: this.name });
      const merged = { ...(existing.metadata?.labels ?? {}), ...labels };
      if (JSON.stringify(merged) !== JSON.stringify(existing.metadata?.labels ?? {})) {
        await this.sim.core.replaceNode({ name: this.name, body: { ...existing, metadata: { ...existing.metadata, labels: merged } } });
      }
    } catch (err) {
      if (codeOf(err) !== 404) throw err;
      await this.sim.core.createNode({ body: { apiVersion: 'v1', kind: 'Node', metadata: { name: this.name, labels } } });
    }
    this.lastHeartbeat = Date.now();
    await this.writeNodeStatus(true);
    this.heartbeat = setInterval(() => {
      this.lastHeartbeat = Date.now();
      this.nodeStatusWritten = '';
    }, this.sim.heartbeatMs);
    this.heartbeat.unref();
    this.watch();
  }

  /** Writes the Node's status when it changed (a new device list, a heartbeat). */
  async writeNodeStatus(force = false): Promise<void> {
    const status = this.nodeStatus();
    const key = JSON.stringify(status);
    if (!force && key === this.nodeStatusWritten) return;
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        const node = await this.sim.core.readNode({ name: this.name });
        await this.sim.core.replaceNodeStatus({ name: this.name, body: { ...node, status } });
        this.nodeStatusWritten = key;
        return;
      } catch (err) {
        if (codeOf(err) !== 409) throw err;
      }
    }
  }

  /** A watch of the node's Pods that kicks the sync loop; it is restarted when it ends. */
  private watch(): void {
    if (this.watching || this.sim.closed) return;
    this.watching = true;
    const ended = () => {
      this.watching = false;
      this.watchAbort = undefined;
      if (!this.sim.closed) setTimeout(() => this.watch(), 500).unref();
    };
    new Watch(this.sim.kc)
      .watch('/api/v1/pods', { fieldSelector: `spec.nodeName=${this.name}`, timeoutSeconds: 60 }, () => this.sim.kick(), ended)
      .then((abort) => {
        this.watchAbort = abort;
        if (this.sim.closed) abort.abort();
      })
      .catch(ended);
  }

  async stopAll(): Promise<void> {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.watchAbort?.abort();
    await Promise.all([...this.pods.values()].map((p) => this.sim.stopPod(p, 0)));
    this.pods.clear();
  }
}

/**
 * The running simulator. `sync()` runs every probe period and on every Pod event: it starts,
 * probes, restarts and stops containers and writes Pod and Node status.
 */
export class KubeletSimulator {
  readonly kc = new KubeConfig();
  readonly core: CoreV1Api;
  readonly nodes = new Map<string, SimulatedNode>();
  readonly logDir: string;
  readonly startedAt = now();
  readonly heartbeatMs: number;
  closed = false;
  private engineSim?: { command: string; args: readonly string[]; cwd: string };
  private timer?: NodeJS.Timeout;
  private syncing?: Promise<void>;
  private again = false;
  private readonly usedIps = new Set<string>();
  private nextIp = 2;
  private readonly ownsLogDir: boolean;
  /** The Pods' volumes (`<uid>/<volume>`), made for the containers the simulator runs locally. */
  readonly volumesDir: string;
  /** Errors of the sync loop (API errors, spawn failures), the latest 50, for a failing test to print. */
  readonly errors: string[] = [];

  private constructor(private readonly options: KubeletSimulatorOptions) {
    if (typeof options.api === 'string') this.kc.loadFromFile(options.api);
    else this.kc.loadFromOptions(options.api.kubeConfig());
    this.core = this.kc.makeApiClient(CoreV1Api);
    this.ownsLogDir = !options.logDir;
    this.logDir = options.logDir ?? mkdtempSync(join(tmpdir(), 'gpufleet-kubelet-sim-'));
    mkdirSync(this.logDir, { recursive: true });
    this.heartbeatMs = options.heartbeatMs ?? 5000;
    this.volumesDir = mkdtempSync(join(tmpdir(), 'gpufleet-kubelet-sim-volumes-'));
    // Containers may run as another user (runAsUser): it must reach its volumes.
    chmodSync(this.volumesDir, 0o755);
  }

  static async start(options: KubeletSimulatorOptions): Promise<KubeletSimulator> {
    const sim = new KubeletSimulator(options);
    sim.engineSim = options.engineSim ?? { command: process.execPath, args: await freshServiceArgs('engine-sim', REPO_ROOT), cwd: REPO_ROOT };
    try {
      for (const spec of options.nodes) {
        if (spec.devicePluginDir) mkdirSync(spec.devicePluginDir, { recursive: true });
        if (spec.podResourcesDir) mkdirSync(spec.podResourcesDir, { recursive: true });
        const node = new SimulatedNode(spec, await DevicePluginKubelet.start(spec.devicePluginDir), await PodResourcesKubelet.start(spec.podResourcesDir), sim);
        sim.nodes.set(spec.name, node);
        await node.register();
      }
    } catch (err) {
      await sim.stop();
      throw err;
    }
    sim.timer = setInterval(() => sim.kick(), sim.probePeriodMs);
    sim.timer.unref();
    sim.kick();
    return sim;
  }

  get probePeriodMs(): number {
    return this.options.probePeriodMs ?? 500;
  }

  node(name: string): SimulatedNode {
    const node = this.nodes.get(name);
    if (!node) throw new Error(`no simulated node ${name}`);
    return node;
  }

  /** The device-plugins directory of a node (DEVICE_PLUGIN_DIR of its agent). */
  devicePluginDir(name: string): string {
    return this.node(name).devicePlugins.dir;
  }

  /** The pod-resources directory of a node (POD_RESOURCES_DIR of its agent). */
  podResourcesDir(name: string): string {
    return this.node(name).podResources.dir;
  }

  /** The child process of a Pod's container (to kill it in a test); undefined when not running. */
  processOf(namespace: string, pod: string, container?: string): ChildProcess | undefined {
    for (const node of this.nodes.values())
      for (const run of node.pods.values())
        if (run.namespace === namespace && run.name === pod) return (container ? run.containers.find((c) => c.spec.name === container) : run.containers[0])?.proc;
    return undefined;
  }

  /** The local user a Pod's container runs as (an instance's sshd: the one login user). */
  userOf(namespace: string, pod: string, container?: string): string | undefined {
    for (const node of this.nodes.values())
      for (const run of node.pods.values())
        if (run.namespace === namespace && run.name === pod) return (container ? run.containers.find((c) => c.spec.name === container) : run.containers[0])?.user?.name;
    return undefined;
  }

  /** A kubelet restart on `name` (every node by default): plugin sockets go, kubelet.sock is made anew; Pods keep running. */
  async restart(name?: string): Promise<void> {
    for (const node of name ? [this.node(name)] : this.nodes.values()) await node.devicePlugins.restart();
    this.kick();
  }

  /** Runs a sync pass soon (one at a time; a kick during a pass runs another after it). */
  kick(): void {
    if (this.closed) return;
    if (this.syncing) {
      this.again = true;
      return;
    }
    this.syncing = this.sync()
      .catch((err: Error) => this.error(`sync: ${err?.message ?? err}`))
      .finally(() => {
        this.syncing = undefined;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  private error(message: string): void {
    this.errors.push(`${now()} ${message}`);
    if (this.errors.length > 50) this.errors.shift();
  }

  private async sync(): Promise<void> {
    for (const node of this.nodes.values()) {
      if (this.closed) return;
      await node.writeNodeStatus().catch((err: Error) => this.error(`node ${node.name} status: ${err.message}`));
      let listed: V1Pod[];
      try {
        listed = (await this.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node.name}` })).items;
      } catch (err) {
        this.error(`list pods of ${node.name}: ${(err as Error).message}`);
        continue;
      }
      const seen = new Set<string>();
      for (const pod of listed) {
        const uid = pod.metadata?.uid ?? '';
        seen.add(uid);
        let run = node.pods.get(uid);
        if (pod.metadata?.deletionTimestamp) {
          if (run) await this.stopPod(run, this.graceMs(pod));
          // The kubelet's final delete: the object goes once its finalizers are gone.
          await this.core.deleteNamespacedPod({ name: pod.metadata.name!, namespace: pod.metadata.namespace!, gracePeriodSeconds: 0 }).catch(() => undefined);
          if (run) this.forget(node, run);
          continue;
        }
        if (!run) {
          if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') continue; // finished before (a restart of the simulator)
          run = await this.admit(node, pod);
          node.pods.set(uid, run);
        }
        run.pod = pod;
        if (run.phase === 'Pending' || run.phase === 'Running') await this.tick(run);
        await this.writePodStatus(run).catch((err: Error) => this.error(`status of ${run!.namespace}/${run!.name}: ${err.message}`));
      }
      for (const [uid, run] of node.pods) {
        if (seen.has(uid)) continue;
        // DELETED without a grace period (the simulator deletes at once): stop what runs.
        void this.stopPod(run, this.graceMs(run.pod)).then(() => this.forget(node, run));
        node.pods.delete(uid);
      }
    }
  }

  private graceMs(pod: V1Pod): number {
    const s = pod.metadata?.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
    return Math.min(s * 1000, this.options.maxGraceMs ?? 5000);
  }

  private forget(node: SimulatedNode, run: PodRun): void {
    node.pods.delete(run.uid);
    node.podResources.pods = node.podResources.pods.filter((p) => !(p.name === run.name && p.namespace === run.namespace));
    if (run.ip) this.usedIps.delete(run.ip);
    rmSync(join(this.volumesDir, run.uid), { recursive: true, force: true });
  }

  /** Admission (device capacity), Allocate, the pod IP, the containers' environments. */
  private async admit(node: SimulatedNode, pod: V1Pod): Promise<PodRun> {
    const run: PodRun = {
      uid: pod.metadata!.uid!,
      namespace: pod.metadata!.namespace!,
      name: pod.metadata!.name!,
      pod,
      phase: 'Pending',
      startTime: now(),
      containers: (pod.spec?.containers ?? []).map((spec) => ({ spec, state: 'waiting', reason: 'ContainerCreating', ready: false, started: false, restartCount: 0, probing: false, lastProbe: 0, env: {} })),
      devices: new Map(),
      stopped: false,
    };
    const fail = (reason: string, message: string): PodRun => {
      run.phase = 'Failed';
      run.reason = reason;
      run.message = message;
      for (const c of run.containers) c.reason = reason === 'ErrImagePull' ? reason : 'ContainerCreating';
      return run;
    };
    // What the node has, less what running pods hold.
    const available = node.resources();
    for (const other of node.pods.values()) {
      if (other.stopped || other.phase === 'Failed' || other.phase === 'Succeeded') continue;
      for (const [resource, ids] of other.devices) available.set(resource, (available.get(resource) ?? []).filter((id) => !ids.includes(id)));
    }
    for (const c of run.containers) {
      for (const [resource, n] of deviceRequests(c.spec)) {
        const free = available.get(resource) ?? [];
        if (free.length < n) return fail(`OutOf${resource}`, `Node didn't have enough resource: ${resource}, requested: ${n}, used: ${Math.max(0, (node.resources().get(resource)?.length ?? 0) - free.length)}, capacity: ${node.resources().get(resource)?.length ?? 0}`);
        const wanted = annotatedDevices(pod, resource);
        const ids = wanted.length === n && wanted.every((id) => free.includes(id)) ? wanted : free.slice(0, n);
        available.set(resource, free.filter((id) => !ids.includes(id)));
        try {
          const [response] = await node.devicePlugins.allocate(resource, ids);
          Object.assign(c.env, response?.envs ?? {});
        } catch (err) {
          return fail('UnexpectedAdmissionError', `Allocate failed due to ${(err as Error).message}, which is unexpected`);
        }
        run.devices.set(resource, [...(run.devices.get(resource) ?? []), ...ids]);
        node.podResources.assign(run.namespace, run.name, c.spec.name, resource, ids);
      }
    }
    // engine-sim, an instance's sshd sidecar, and the workload container beside it run locally.
    const instancePod = run.containers.some((c) => SSHD_IMAGE.test(c.spec.image ?? ''));
    for (const c of run.containers) {
      const image = c.spec.image ?? '';
      c.kind = ENGINE_SIM_IMAGE.test(image) ? 'engine-sim' : SSHD_IMAGE.test(image) ? 'sshd' : instancePod && c.spec.name === 'workload' ? 'workload' : undefined;
      if (!c.kind) {
        c.message = `the kubelet simulator runs only gpufleet/engine-sim and gpufleet/sshd images (and an instance Pod's workload container); cannot run ${image}`;
        return fail('ErrImagePull', `container ${c.spec.name}: ${c.message}`);
      }
      const runAs = c.spec.securityContext?.runAsUser ?? pod.spec?.securityContext?.runAsUser;
      const self = userInfo();
      const account = c.kind !== 'engine-sim' && self.uid === 0 && runAs !== undefined && runAs !== 0 ? accountOf(runAs) : undefined;
      c.user = account ?? { name: self.username, uid: self.uid, gid: self.gid };
    }
    // Environment: values and Secrets (secretKeyRef), as the kubelet resolves them.
    for (const c of run.containers) {
      const env: Record<string, string> = {};
      for (const e of c.spec.env ?? []) {
        if (e.value !== undefined) env[e.name] = e.value;
        else if (e.valueFrom?.secretKeyRef) {
          const ref = e.valueFrom.secretKeyRef;
          const secret = await this.core.readNamespacedSecret({ name: ref.name!, namespace: run.namespace }).catch(() => undefined);
          const value = secret?.data?.[ref.key] ?? (secret?.stringData as Record<string, string> | undefined)?.[ref.key];
          if (value === undefined && !ref.optional) {
            c.reason = 'CreateContainerConfigError';
            c.message = secret ? `couldn't find key ${ref.key} in Secret ${run.namespace}/${ref.name}` : `secret "${ref.name}" not found`;
            return run; // stays Pending, waiting: CreateContainerConfigError
          }
          if (value !== undefined) env[e.name] = secret?.data?.[ref.key] ? Buffer.from(value, 'base64').toString() : value;
        } else if (e.valueFrom?.fieldRef?.fieldPath) {
          const path = e.valueFrom.fieldRef.fieldPath;
          env[e.name] = path === 'metadata.name' ? run.name : path === 'metadata.namespace' ? run.namespace : path === 'spec.nodeName' ? node.name : '';
        }
      }
      c.env = { ...env, ...c.env };
    }
    run.ip = await this.allocateIp(run);
    return run;
  }

  private async allocateIp(run: PodRun): Promise<string> {
    const prefix = this.options.podIpPrefix ?? '127.0.0.';
    const ports = run.containers.flatMap((c) => (c.spec.ports ?? []).map((p) => p.containerPort));
    for (let tries = 0; tries < 250; tries++) {
      const ip = `${prefix}${this.nextIp}`;
      this.nextIp = this.nextIp >= 254 ? 2 : this.nextIp + 1;
      if (this.usedIps.has(ip)) continue;
      let free = true;
      for (const port of ports) if (!(await bindable(ip, port))) free = false;
      if (!free) continue;
      this.usedIps.add(ip);
      return ip;
    }
    throw new Error(`no free pod IP under ${prefix}*`);
  }

  /** One step of each container: start, restart after backoff, probe. */
  private async tick(run: PodRun): Promise<void> {
    if (run.stopped || !run.ip) return;
    const policy = run.pod.spec?.restartPolicy ?? 'Always';
    for (const c of run.containers) {
      if (c.reason === 'CreateContainerConfigError') continue;
      if (c.state === 'waiting' && (!c.backoffUntil || Date.now() >= c.backoffUntil)) this.startContainer(run, c);
      else if (c.state === 'terminated') {
        const restart = policy === 'Always' || (policy === 'OnFailure' && c.exitCode !== 0);
        if (restart) {
          const backoff = Math.min((this.options.backoffMs ?? 200) * 2 ** Math.max(0, c.restartCount - 1), this.options.maxBackoffMs ?? 5000);
          c.state = 'waiting';
          c.reason = 'CrashLoopBackOff';
          c.message = `back-off ${backoff}ms restarting failed container=${c.spec.name} pod=${run.name}_${run.namespace}(${run.uid})`;
          c.backoffUntil = Date.now() + backoff;
        }
      } else if (c.state === 'running') await this.probe(run, c);
    }
    if (run.containers.some((c) => c.state === 'running' || c.restartCount > 0)) run.phase = 'Running';
    if (policy !== 'Always' && run.containers.every((c) => c.state === 'terminated')) {
      run.phase = run.containers.every((c) => c.exitCode === 0) ? 'Succeeded' : 'Failed';
    }
  }

  /** The container's volume mounts as local directories (made, owned by its user): mount path → directory. */
  private mounts(run: PodRun, c: ContainerRun): Array<[string, string]> {
    const out: Array<[string, string]> = [];
    for (const m of c.spec.volumeMounts ?? []) {
      const dir = join(this.volumesDir, run.uid, m.name);
      if (!existsSync(dir)) {
        mkdirSync(dir, { recursive: true, mode: 0o755 });
        chmodSync(join(this.volumesDir, run.uid), 0o755);
        if (c.user && c.user.uid !== userInfo().uid) chownSync(dir, c.user.uid, c.user.gid);
      }
      out.push([m.mountPath, dir]);
    }
    // The longest mount path first, so a nested mount wins.
    return out.sort((a, b) => b[0].length - a[0].length);
  }

  /** A local process for an instance's sshd sidecar or workload: its command with mount paths made local. */
  private localCommand(run: PodRun, c: ContainerRun): { command: string; args: string[]; cwd: string; env: Record<string, string> } | string {
    const mounts = this.mounts(run, c);
    const local = (s: string): string => mounts.reduce((acc, [path, dir]) => acc.split(path).join(dir), s);
    const argv = [...(c.spec.command ?? []), ...(c.spec.args ?? [])].map(local);
    if (argv.length === 0) return `container ${c.spec.name} has no command; the image's entrypoint is not known to the simulator`;
    if (c.kind === 'sshd') {
      const i = argv.findIndex((a) => SSHD_EXEC.test(a));
      if (i < 0) return 'an sshd container must `exec /usr/sbin/sshd …` (SSHD_SCRIPT)';
      // Listen on the pod's own IP, as in the Pod's network namespace.
      argv[i] = argv[i].replace(SSHD_EXEC, (_all, path: string) => `exec ${path} -o ListenAddress=${run.ip} `);
    }
    const env = Object.fromEntries(Object.entries(c.env).map(([k, v]) => [k, local(v)]));
    const cwd = c.spec.workingDir ? local(c.spec.workingDir) : (env.HOME ?? '/');
    return { command: argv[0], args: argv.slice(1), cwd: existsSync(cwd) ? cwd : '/', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOSTNAME: run.name, ...env } };
  }

  private startContainer(run: PodRun, c: ContainerRun): void {
    if (c.kind === 'sshd' || c.kind === 'workload') {
      const local = this.localCommand(run, c);
      if (typeof local === 'string') {
        c.state = 'waiting';
        c.reason = 'RunContainerError';
        c.message = local;
        return;
      }
      const ids = c.user && c.user.uid !== userInfo().uid ? { uid: c.user.uid, gid: c.user.gid } : {};
      this.spawnContainer(run, c, local.command, local.args, { cwd: local.cwd, env: local.env, ...ids });
      return;
    }
    const argv = [...(c.spec.command ?? []), ...(c.spec.args ?? [])];
    const serve = argv.indexOf('serve');
    if (serve < 0) {
      c.state = 'waiting';
      c.reason = 'RunContainerError';
      c.message = 'an engine-sim container must run `… serve <model> …`';
      return;
    }
    const tail = argv.slice(serve + 1);
    const port = c.spec.ports?.[0]?.containerPort;
    const set = (flag: string, value: string) => {
      const i = tail.indexOf(flag);
      if (i >= 0) tail[i + 1] = value;
      else tail.push(flag, value);
    };
    set('--host', run.ip!);
    if (port) set('--port', String(port));
    const entry = this.engineSim!;
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', LOG_LEVEL: 'warn', NATS_URL: '', HOSTNAME: run.name, ...c.env };
    this.spawnContainer(run, c, entry.command, [...entry.args, 'serve', ...tail], { cwd: entry.cwd, env });
  }

  private spawnContainer(run: PodRun, c: ContainerRun, command: string, args: string[], options: { cwd: string; env: Record<string, string>; uid?: number; gid?: number }): void {
    const log = (c.log ??= createWriteStream(join(this.logDir, `${run.namespace}_${run.name}_${c.spec.name}.log`), { flags: 'a' }));
    log.write(`--- ${now()} start ${[command, ...args].join(' ')}${c.user ? ` (as ${c.user.name})` : ''}\n`);
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    LIVE.add(child);
    if (!exitHook) {
      exitHook = true;
      process.once('exit', () => {
        for (const p of LIVE) p.kill('SIGKILL');
      });
    }
    child.stdout?.pipe(log, { end: false });
    child.stderr?.pipe(log, { end: false });
    c.proc = child;
    c.state = 'running';
    c.reason = undefined;
    c.message = undefined;
    c.ready = false;
    c.started = !c.spec.startupProbe;
    c.startedAt = now();
    c.lastProbe = 0;
    const startedAt = c.startedAt;
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      LIVE.delete(child);
      if (c.proc !== child) return;
      c.proc = undefined;
      c.ready = false;
      c.started = false;
      c.state = 'terminated';
      c.exitCode = code ?? 128 + (signal ? (SIGNALS[signal] ?? 0) : 0);
      c.lastTerminated = { exitCode: c.exitCode, ...(signal ? { signal: SIGNALS[signal] } : {}), reason: c.exitCode === 0 ? 'Completed' : 'Error', startedAt, finishedAt: now() };
      // The simulator may have closed the log (stop) before a killed child reports its exit.
      if (!log.writableEnded) log.write(`--- ${now()} exited ${code ?? signal}\n`);
      if (!run.stopped) {
        if ((run.pod.spec?.restartPolicy ?? 'Always') !== 'Never') c.restartCount++;
        this.kick();
      }
    };
    child.once('exit', onExit);
    child.once('error', (err) => {
      if (!log.writableEnded) log.write(`--- spawn error: ${err.message}\n`);
      onExit(127, null);
    });
  }

  private async probe(run: PodRun, c: ContainerRun): Promise<void> {
    const probe = c.started ? c.spec.readinessProbe : c.spec.startupProbe;
    const period = Math.min((probe?.periodSeconds ?? 10) * 1000, this.probePeriodMs);
    if (c.probing || Date.now() - c.lastProbe < period) return;
    if (probe?.tcpSocket) {
      c.probing = true;
      c.lastProbe = Date.now();
      const portRef = probe.tcpSocket.port as number | string;
      const port = typeof portRef === 'number' ? portRef : Number(portRef) || c.spec.ports?.find((p) => p.name === portRef)?.containerPort;
      const ok = port ? await connectable(run.ip!, port, (probe.timeoutSeconds ?? 1) * 1000) : false;
      if (!c.started) c.started = ok;
      else c.ready = ok;
      c.probing = false;
      return;
    }
    if (!probe?.httpGet) {
      // No probe (or one the simulator does not run, exec): ready once running.
      c.started = true;
      c.ready = true;
      return;
    }
    c.probing = true;
    c.lastProbe = Date.now();
    try {
      const portRef = probe.httpGet.port as number | string;
      const port = typeof portRef === 'number' ? portRef : Number(portRef) || c.spec.ports?.find((p) => p.name === portRef)?.containerPort;
      const res = await fetch(`http://${run.ip}:${port}${probe.httpGet.path ?? '/'}`, { signal: AbortSignal.timeout((probe.timeoutSeconds ?? 1) * 1000) });
      await res.body?.cancel();
      const ok = res.status >= 200 && res.status < 400;
      if (!c.started) c.started = ok;
      else c.ready = ok;
    } catch {
      if (c.started) c.ready = false;
    } finally {
      c.probing = false;
    }
  }

  /** SIGTERM every container, SIGKILL after `graceMs`; resolves when all exited. */
  stopPod(run: PodRun, graceMs: number): Promise<void> {
    run.stopped = true;
    return (run.stopping ??= Promise.all(
      run.containers.map(async (c) => {
        const child = c.proc;
        if (!child) return;
        if (child.exitCode === null && child.signalCode === null) {
          const exited = new Promise<void>((r) => child.once('exit', () => r()));
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
          await Promise.race([exited, sleep(graceMs + 2000)]);
          clearTimeout(timer);
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        }
        // stdout may still deliver after 'exit': detach it before ending the log, or a late
        // chunk is a "write after end" error.
        if (c.log) {
          child.stdout?.unpipe(c.log);
          child.stderr?.unpipe(c.log);
        }
        c.log?.end();
      }),
    ).then(() => undefined));
  }

  private statusOf(run: PodRun): V1PodStatus {
    const t = (s?: string) => s as unknown as Date;
    const containerStatuses: V1ContainerStatus[] = run.containers.map((c) => ({
      name: c.spec.name,
      image: c.spec.image ?? '',
      imageID: '',
      containerID: c.startedAt ? `gpufleet-sim://${run.uid}/${c.spec.name}/${c.restartCount}` : undefined,
      ready: c.ready,
      started: c.started,
      restartCount: c.restartCount,
      state:
        c.state === 'running'
          ? { running: { startedAt: t(c.startedAt) } }
          : c.state === 'terminated' && c.lastTerminated
            ? { terminated: { ...c.lastTerminated, startedAt: t(c.lastTerminated.startedAt), finishedAt: t(c.lastTerminated.finishedAt) } }
            : { waiting: { reason: c.reason ?? 'ContainerCreating', ...(c.message ? { message: c.message } : {}) } },
      ...(c.lastTerminated && c.state !== 'terminated'
        ? { lastState: { terminated: { ...c.lastTerminated, startedAt: t(c.lastTerminated.startedAt), finishedAt: t(c.lastTerminated.finishedAt) } } }
        : {}),
    }));
    const ready = run.phase === 'Running' && run.containers.every((c) => c.ready);
    const cond = (type: string, ok: boolean, reason?: string): V1PodCondition => ({ type, status: ok ? 'True' : 'False', ...(reason && !ok ? { reason } : {}) });
    return {
      phase: run.phase,
      ...(run.reason ? { reason: run.reason, message: run.message } : {}),
      hostIP: '127.0.0.1',
      hostIPs: [{ ip: '127.0.0.1' }],
      ...(run.ip ? { podIP: run.ip, podIPs: [{ ip: run.ip }] } : {}),
      startTime: t(run.startTime),
      qosClass: 'Guaranteed',
      conditions: [
        cond('PodReadyToStartContainers', !!run.ip),
        cond('Initialized', true),
        cond('Ready', ready, 'ContainersNotReady'),
        cond('ContainersReady', ready, 'ContainersNotReady'),
        cond('PodScheduled', true),
      ],
      containerStatuses,
    };
  }

  private async writePodStatus(run: PodRun): Promise<void> {
    if (run.stopped) return;
    const status = this.statusOf(run);
    const key = JSON.stringify(status);
    if (key === run.written) return;
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        const pod = attempt === 0 ? run.pod : await this.core.readNamespacedPod({ name: run.name, namespace: run.namespace });
        if (pod.metadata?.uid !== run.uid) return;
        // Conditions keep their transition times while their status holds.
        const before = new Map((pod.status?.conditions ?? []).map((c) => [c.type, c]));
        const conditions = status.conditions!.map((c) => {
          const old = before.get(c.type);
          return { ...c, lastTransitionTime: (old && old.status === c.status ? old.lastTransitionTime : now()) as unknown as Date };
        });
        run.pod = await this.core.replaceNamespacedPodStatus({ name: run.name, namespace: run.namespace, body: { ...pod, status: { ...status, conditions } } });
        run.written = key;
        return;
      } catch (err) {
        const code = codeOf(err);
        if (code === 404) return;
        if (code !== 409) throw err;
      }
    }
  }

  /** Kills every container (SIGTERM, then SIGKILL), stops the plugin and pod-resources servers, removes temporary directories. */
  async stop(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.syncing?.catch(() => undefined);
    for (const node of this.nodes.values()) {
      await node.stopAll();
      await node.devicePlugins.stop();
      await node.podResources.stop();
    }
    if (this.ownsLogDir) rmSync(this.logDir, { recursive: true, force: true });
    rmSync(this.volumesDir, { recursive: true, force: true });
  }
}

/** Starts a kubelet simulator for `nodes` against the API server (simulator) `api`. */
export function startKubeletSimulator(options: KubeletSimulatorOptions): Promise<KubeletSimulator> {
  return KubeletSimulator.start(options);
}
