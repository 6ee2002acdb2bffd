import type { V1ContainerStatus, V1ContainerStateTerminated, V1Pod, V1Service } from '@kubernetes/client-node';
import type { PodRuntimeStatus } from '@gpufleet/contracts';
import { KubeAnnotations, KubeLabels, MANAGED_BY } from './names';

/** The states node runtimes write (PodRuntimeStatus.state). */
export type PodState = 'Starting' | 'Running' | 'Ready' | 'Backoff' | 'Stopping' | 'Stopped' | 'Failed';

/** The least healthy container is the pod's state, as on the process runtime. */
const RANK: Readonly<Record<PodState, number>> = { Failed: 0, Backoff: 1, Stopping: 2, Stopped: 3, Starting: 4, Running: 5, Ready: 6 };

/** Waiting reasons the kubelet keeps retrying: the container backs off and may still start. */
const BACKOFF_REASONS = new Set(['CrashLoopBackOff', 'ImagePullBackOff', 'ErrImagePull', 'CreateContainerError', 'RunContainerError', 'PreStartHookError', 'PostStartHookError']);
/** Waiting reasons that need a fix before the container can start. */
const FAILED_REASONS = new Set(['InvalidImageName', 'ErrImageNeverPull', 'CreateContainerConfigError']);

export interface PodStatusOptions {
  /** updated_at; default now. */
  readonly now?: Date;
  /**
   * The instance's SSH Service, where users ssh to (`sshEndpointOf`): a LoadBalancer's ingress
   * and port, a node port on the Pod's node, else the Pod's own address.
   */
  readonly service?: V1Service;
  /** Where the pod's logs are served. */
  readonly runtimeUrl?: string;
}

type Timestamp = Date | string | undefined;

function toDate(value: Timestamp): Date | undefined {
  if (value === undefined) return undefined;
  const date = value instanceof Date ? value : new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

/**
 * A Pod as gpufleet's pod status (the record node runtimes write): Ready from the Ready
 * condition, restarts from the containers' restartCount, failures (CrashLoopBackOff,
 * ImagePullBackOff, OOMKilled with its exit code, Evicted, Unschedulable, a missing Secret) in
 * `state`, `last_exit` and `message`. Undefined for a Pod gpufleet did not make (no managed-by
 * label, or no pod labels).
 */
export function podStatusOf(pod: V1Pod, options: PodStatusOptions = {}): PodRuntimeStatus | undefined {
  const labels = pod.metadata?.labels ?? {};
  if (labels[KubeLabels.managedBy] !== MANAGED_BY || !labels[KubeLabels.workload]) return undefined;
  const containers = pod.status?.containerStatuses ?? [];
  const main = pod.spec?.containers?.[0];
  const mainPort = main?.ports?.[0]?.containerPort ?? 0;
  const instance = labels[KubeLabels.component] === 'instance';
  const sshPort = instance ? (pod.spec?.containers?.find((c) => c.name === 'sshd')?.ports?.[0]?.containerPort ?? mainPort) : mainPort;
  const endpoint = instance ? sshEndpointOf(pod, options.service) : undefined;
  const status: PodRuntimeStatus = {
    node: pod.spec?.nodeName ?? labels[KubeLabels.node] ?? '',
    namespace: labels[KubeLabels.namespace] ?? pod.metadata?.namespace ?? '',
    workload: labels[KubeLabels.workload],
    podSet: labels[KubeLabels.podSet] ?? '',
    replica: Number(labels[KubeLabels.replica] ?? 0),
    pod: Number(labels[KubeLabels.pod] ?? 0),
    state: 'Starting',
    pid: 0,
    host: endpoint?.host ?? pod.status?.podIP ?? '',
    port: endpoint?.port ?? sshPort,
    restarts: containers.reduce((sum, c) => sum + (c.restartCount ?? 0), 0),
    lastExit: lastExitOf(containers),
    startedAt: startedAtOf(pod, main?.name),
    updatedAt: options.now ?? new Date(),
    runtimeUrl: options.runtimeUrl ?? '',
    templateHash: pod.metadata?.annotations?.[KubeAnnotations.templateHash] ?? '',
    devicesEnv: {},
    sshHostKey: '',
    sshUser: instance ? 'gpufleet' : '',
    message: '',
    sandbox: sandboxOf(containers),
    // As a node runtime reports a group's pods; their members find each other through the
    // replica's headless Service, not through this record.
    groupRole: labels[KubeLabels.groupRole] ?? '',
    groupPort: labels[KubeLabels.groupRole] === 'leader' ? (main?.ports?.find((p) => p.name === 'rendezvous')?.containerPort ?? 0) : 0,
  };
  const { state, message } = stateOf(pod, containers);
  status.state = state;
  status.message = message;
  return status;
}

/**
 * Where to ssh to an instance's Pod through its Service: a LoadBalancer's first ingress (IP, else
 * host name) on the Service port; before the load balancer is provisioned, and for a NodePort,
 * the Pod's node address (`status.hostIP`) on the node port. Undefined (the Pod's own IP and the
 * sidecar's port) for a ClusterIP Service, none, or a node port not yet allocated.
 */
export function sshEndpointOf(pod: V1Pod, service: V1Service | undefined): { host: string; port: number } | undefined {
  const port = service?.spec?.ports?.[0];
  const type = service?.spec?.type;
  if (!port || (type !== 'NodePort' && type !== 'LoadBalancer')) return undefined;
  const ingress = type === 'LoadBalancer' ? service?.status?.loadBalancer?.ingress?.[0] : undefined;
  const lb = ingress?.ip || ingress?.hostname;
  if (lb) return { host: lb, port: port.port };
  const node = pod.status?.hostIP;
  return port.nodePort && node ? { host: node, port: port.nodePort } : undefined;
}

function stateOf(pod: V1Pod, containers: readonly V1ContainerStatus[]): { state: PodState; message: string } {
  const phase = pod.status?.phase ?? 'Pending';
  const deleting = toDate(pod.metadata?.deletionTimestamp as Timestamp);
  if (deleting) return { state: 'Stopping', message: `terminating: deletion requested at ${deleting.toISOString()}` };
  if (phase === 'Succeeded') return { state: 'Stopped', message: 'every container exited' };
  if (phase === 'Failed') {
    // Evicted, OutOf<resource> (kubelet admission), NodeAffinity, Shutdown, …
    const reason = pod.status?.reason ?? 'Failed';
    return { state: 'Failed', message: `${reason}: ${pod.status?.message ?? 'the pod failed'}` };
  }
  const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
  if (phase === 'Pending' && scheduled?.status === 'False' && scheduled.reason === 'Unschedulable') {
    return { state: 'Failed', message: `Unschedulable: ${scheduled.message ?? 'no node can take the pod'}` };
  }
  const ready = pod.status?.conditions?.find((c) => c.type === 'Ready');
  if (ready?.status === 'True') return { state: 'Ready', message: '' };
  const named = containers.length > 1;
  let worst: { state: PodState; message: string } = { state: 'Starting', message: containers.length === 0 ? 'waiting for the kubelet to start the pod' : '' };
  let first = true;
  for (const c of containers) {
    const s = containerState(c);
    const entry = { state: s.state, message: s.message && named ? `${c.name}: ${s.message}` : s.message };
    if (first || RANK[entry.state] < RANK[worst.state]) worst = entry;
    first = false;
  }
  return worst;
}

function containerState(c: V1ContainerStatus): { state: PodState; message: string } {
  const waiting = c.state?.waiting;
  if (waiting) {
    const reason = waiting.reason ?? 'Waiting';
    const text = waiting.message ? `${reason}: ${waiting.message}` : reason;
    if (reason === 'CreateContainerConfigError' && /secret/i.test(waiting.message ?? '')) {
      // The process runtime's wording, so a missing Secret reads the same on both runtimes.
      return { state: 'Failed', message: `SECRET_NOT_FOUND: ${waiting.message}` };
    }
    if (FAILED_REASONS.has(reason)) return { state: 'Failed', message: text };
    if (BACKOFF_REASONS.has(reason)) return { state: 'Backoff', message: text };
    return { state: 'Starting', message: reason === 'ContainerCreating' || reason === 'PodInitializing' ? '' : text };
  }
  if (c.state?.running) {
    if (c.ready) return { state: 'Ready', message: '' };
    return { state: 'Running', message: c.started === false ? 'alive, waiting for its startup probe to pass' : 'alive, waiting for its health probe to pass' };
  }
  if (c.state?.terminated) return { state: 'Backoff', message: `restarting (last exit: ${exitText(c.state.terminated)})` };
  return { state: 'Starting', message: '' };
}

/** `OOMKilled: exited with code 137`, `exited with code 1`, `killed by signal 9`, as the process runtime words exits. */
export function exitText(t: V1ContainerStateTerminated): string {
  const how = t.signal ? `killed by signal ${t.signal}` : `exited with code ${t.exitCode}`;
  if (!t.reason || t.reason === 'Error' || t.reason === 'Completed') return t.message ? `${how}: ${t.message}` : how;
  return t.message ? `${t.reason}: ${how}: ${t.message}` : `${t.reason}: ${how}`;
}

function lastExitOf(containers: readonly V1ContainerStatus[]): string {
  let latest: { at: number; text: string } | undefined;
  for (const c of containers) {
    const t = c.state?.terminated ?? c.lastState?.terminated;
    if (!t) continue;
    const at = toDate(t.finishedAt as Timestamp)?.getTime() ?? 0;
    const text = containers.length > 1 ? `${c.name}: ${exitText(t)}` : exitText(t);
    if (!latest || at > latest.at) latest = { at, text };
  }
  return latest?.text ?? '';
}

function startedAtOf(pod: V1Pod, main: string | undefined): Date | undefined {
  const c = pod.status?.containerStatuses?.find((s) => s.name === main);
  return toDate(c?.state?.running?.startedAt as Timestamp) ?? toDate(pod.status?.startTime as Timestamp);
}

/** `container containerd`: confined by the container runtime (the process runtime writes `bwrap uid …`). */
function sandboxOf(containers: readonly V1ContainerStatus[]): string {
  const id = containers.find((c) => c.containerID)?.containerID ?? '';
  const runtime = id.includes('://') ? id.slice(0, id.indexOf('://')) : '';
  return runtime ? `container ${runtime}` : '';
}
