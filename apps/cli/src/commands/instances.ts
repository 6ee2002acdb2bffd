import { GPUInstance, InstancePhase } from '@gpufleet/contracts';
import { callUnary } from '@gpufleet/grpc-kit';
import { InstanceFlags, instanceSpecFromFlags } from '../instances/instance-flags';
import { describeInstance, devicesSummary, instancePhaseName, instanceProgress, instanceRequest, sshAddress, sshHint } from '../output/instances';
import { phaseSuffix } from '../output/format';
import { readPublicKeys } from '../ssh/public-keys';
import { Clients, connectClients } from './get';
import { waitWithProgress } from './wait';

type Out = (text: string) => void;

export async function getInstance(c: Clients, namespace: string, name: string): Promise<GPUInstance> {
  const { instance } = await callUnary(c.instances, c.instances.getInstance, { namespace, name });
  if (!instance) throw new Error(`NOT_FOUND: instance "${namespace}/${name}" does not exist`);
  return instance;
}

/** Running: done; Failed, Stopped or a deletion end the wait with the reason. */
export function instanceWaitVerdict(i: GPUInstance): boolean | string {
  const ref = `instance ${i.spec?.namespace}/${i.spec?.name}`;
  const phase = i.status?.phase;
  const why = i.status?.message ? `: ${i.status.message}` : '';
  if (phase === InstancePhase.INSTANCE_PHASE_RUNNING) return true;
  if (phase === InstancePhase.INSTANCE_PHASE_FAILED) return `FAILED: ${ref} failed${why}`;
  if (phase === InstancePhase.INSTANCE_PHASE_STOPPED && i.spec?.stop) return `ABORTED: ${ref} was stopped`;
  if (phase === InstancePhase.INSTANCE_PHASE_DELETING || i.deletionRequestedAt) return `ABORTED: ${ref} is being deleted`;
  return false;
}

async function waitRunning(c: Clients, namespace: string, name: string, timeoutS: number, out: Out): Promise<GPUInstance> {
  out(`waiting up to ${timeoutS}s for it to be Running...`);
  const i = await waitWithProgress({
    what: `instance ${namespace}/${name} to be Running`,
    read: () => getInstance(c, namespace, name),
    done: instanceWaitVerdict,
    progress: instanceProgress,
    timeoutS,
    out,
  });
  out(`instance/${namespace}/${name} is Running on ${i.status?.node || '?'}: ssh ${sshAddress(i)}, ${devicesSummary(i.status?.devicesEnv)}`);
  out(`  connect: ${sshHint(namespace, name)}`);
  return i;
}

/** `gpufleet create instance NAME`: CreateInstance with the caller's public keys, then (with --wait) polls until Running. */
export async function runCreateInstance(
  scheduler: string,
  name: string,
  flags: InstanceFlags & { sshKey?: string[] },
  wait: { wait: boolean; timeoutS: number },
  out: Out,
): Promise<void> {
  const spec = instanceSpecFromFlags(name, flags, () => readPublicKeys(flags.sshKey));
  const clients = connectClients(scheduler, spec.namespace);
  try {
    const { instance } = await callUnary(clients.instances, clients.instances.createInstance, { spec });
    const created = instance ?? GPUInstance.fromPartial({ spec });
    out(
      `instance/${spec.namespace}/${spec.name} created: ${instanceRequest(created)}, ${spec.sshPublicKeys.length} SSH key(s), ` +
        `queue ${spec.localQueue}${phaseSuffix(instancePhaseName(instance?.status?.phase))}`,
    );
    if (wait.wait) await waitRunning(clients, spec.namespace, spec.name, wait.timeoutS, out);
    else out(`  watch:    gpufleet get instance ${name}${spec.namespace === 'default' ? '' : ` -n ${spec.namespace}`} -w\n  connect:  ${sshHint(spec.namespace, name)}   (once Running)`);
  } finally {
    clients.close();
  }
}

/** `gpufleet stop|start instance NAME`: SetInstanceStopped; stopping releases the devices, starting asks for them anew. */
export async function runSetInstanceStopped(
  scheduler: string,
  namespace: string,
  name: string,
  stop: boolean,
  wait: { wait: boolean; timeoutS: number },
  out: Out,
): Promise<void> {
  const clients = connectClients(scheduler, namespace);
  try {
    const { instance } = await callUnary(clients.instances, clients.instances.setInstanceStopped, { namespace, name, stop });
    const n = `${name}${namespace === 'default' ? '' : ` -n ${namespace}`}`;
    out(
      stop
        ? `instance/${namespace}/${name} stopping: its processes end and its devices are released; the record stays (\`gpufleet start instance ${n}\` starts it again)`
        : `instance/${namespace}/${name} starting${instance?.status?.message ? `: ${instance.status.message}` : ''}`,
    );
    if (wait.wait && !stop) await waitRunning(clients, namespace, name, wait.timeoutS, out);
  } finally {
    clients.close();
  }
}

/** `gpufleet describe instance NAME`. */
export async function runDescribeInstance(scheduler: string, namespace: string, name: string, out: Out): Promise<void> {
  const clients = connectClients(scheduler, namespace);
  try {
    out(describeInstance(await getInstance(clients, namespace, name)));
  } finally {
    clients.close();
  }
}

/** `gpufleet delete instance NAME`. */
export async function runDeleteInstance(scheduler: string, namespace: string, name: string, out: Out): Promise<void> {
  const clients = connectClients(scheduler, namespace);
  try {
    await callUnary(clients.instances, clients.instances.deleteInstance, { namespace, name });
    out(`instance/${namespace}/${name} deleted (its processes are stopping and its devices are released)`);
  } finally {
    clients.close();
  }
}
