import type { PodRuntimeStatus } from '@gpufleet/contracts';
import type { ProcessState, ProcessStatus } from '@gpufleet/process-spec';
import type { PodPlan } from './pod-plan';
import { WAITING_REASONS } from './errors';

/** The pod's state is its least healthy process's: an instance is Ready only when its sshd and command are. */
const RANK: Readonly<Record<ProcessState, number>> = { Failed: 0, Backoff: 1, Stopping: 2, Stopped: 3, Starting: 4, Running: 5, Ready: 6 };

export interface PodProcess {
  /** "engine", "sshd" or "command": named in messages when a pod has more than one. */
  readonly role: string;
  readonly status: ProcessStatus;
}

export interface PodStatusInput {
  readonly node: string;
  readonly plan: PodPlan;
  /** The pod's processes, the one whose pid and port are reported first (the engine, the sshd). */
  readonly processes: readonly PodProcess[];
  /** ADVERTISE_HOST. */
  readonly host: string;
  /** `http://<ADVERTISE_HOST>:<HTTP_PORT>`. */
  readonly runtimeUrl: string;
  readonly sshHostKey?: string;
  readonly sshUser?: string;
  /** Restarts counted by earlier runtimes, for a pod this one adopted. */
  readonly restartsBefore?: number;
  /** When an earlier runtime started the adopted process. */
  readonly startedAt?: Date;
  readonly now: Date;
}

/** The record written to the pods bucket for one pod. */
export function podRuntimeStatus(input: PodStatusInput): PodRuntimeStatus {
  const { plan, processes, now } = input;
  const ref = plan.pod.ref;
  const status: PodRuntimeStatus = {
    node: input.node,
    namespace: ref.namespace,
    workload: ref.workload,
    podSet: ref.podSet,
    replica: ref.replica,
    pod: ref.pod,
    state: 'Failed',
    pid: 0,
    host: input.host,
    port: plan.port,
    restarts: input.restartsBefore ?? 0,
    lastExit: '',
    startedAt: undefined,
    updatedAt: now,
    runtimeUrl: input.runtimeUrl,
    templateHash: plan.templateHash,
    devicesEnv: { ...plan.devicesEnv },
    sshHostKey: input.sshHostKey ?? '',
    sshUser: input.sshUser ?? '',
    message: '',
    sandbox: plan.kind !== 'failed' && plan.identity ? `bwrap uid ${plan.identity.uid}` : '',
    groupRole: plan.group?.role ?? '',
    groupPort: plan.group?.port ?? 0,
  };
  if (plan.kind === 'failed') {
    status.message = plan.message;
    // Not a failure: the worker starts as soon as its leader says where to meet, the leader as soon as its workers say where they are, and any pod once its weights are on the node.
    if (plan.reason && WAITING_REASONS.has(plan.reason)) status.state = 'Starting';
    return status;
  }
  if (processes.length === 0) {
    status.state = 'Starting';
    return status;
  }

  const main = processes[0].status;
  const worst = processes.reduce((a, b) => (RANK[b.status.state] < RANK[a.status.state] ? b : a));
  const named = (p: PodProcess, text: string): string => (processes.length > 1 ? `${p.role}: ${text}` : text);
  status.state = worst.status.state;
  status.pid = main.pid ?? 0;
  status.restarts += processes.reduce((sum, p) => sum + p.status.restarts, 0);
  const started = main.startedAt !== undefined ? new Date(main.startedAt) : undefined;
  status.startedAt = main.adopted && input.startedAt ? input.startedAt : started;
  const lastExit = processes
    .filter((p) => p.status.lastExit !== undefined)
    .reduce<PodProcess | undefined>((a, b) => (a === undefined || b.status.lastExit!.at > a.status.lastExit!.at ? b : a), undefined);
  if (lastExit) status.lastExit = named(lastExit, lastExit.status.lastExit!.reason);
  status.message = stateMessage(worst, named);
  return status;
}

function stateMessage(p: PodProcess, named: (p: PodProcess, text: string) => string): string {
  const s = p.status;
  switch (s.state) {
    case 'Backoff': {
      // A time, not a countdown: the record is rewritten on events, not every second.
      const when = s.nextRestartAt !== undefined ? ` at ${new Date(s.nextRestartAt).toISOString()}` : '';
      const last = s.lastExit ? `last exit: ${s.lastExit.reason}; ` : '';
      return named(p, `restarting${when} (${last}failure ${s.consecutiveFailures} in a row)`);
    }
    case 'Failed':
      return named(p, s.lastExit ? `${s.lastExit.reason}; not restarted` : 'failed');
    case 'Running':
      return named(p, s.healthy === false ? 'alive but failing its health probe' : 'alive, waiting for its health probe to pass');
    default:
      return '';
  }
}
