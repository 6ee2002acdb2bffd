import { DeploymentPhase, ModelDeployment, ModelDeploymentSpec } from '@gpufleet/contracts';
import { callUnary } from '@gpufleet/grpc-kit';
import { DeployFlags, deploymentSpecFromFlags } from '../deployments/deploy-flags';
import { deploymentPhaseName, deploymentProgress, describeDeployment, rolePod } from '../output/deployments';
import { phaseSuffix } from '../output/format';
import { Clients, connectClients } from './get';
import { waitWithProgress } from './wait';

type Out = (text: string) => void;

const nsFlag = (ns: string) => (ns === 'default' ? '' : ` -n ${ns}`);

async function getDeployment(c: Clients, namespace: string, name: string): Promise<ModelDeployment> {
  const { deployment } = await callUnary(c.deployments, c.deployments.getDeployment, { namespace, name });
  if (!deployment) throw new Error(`NOT_FOUND: deployment "${namespace}/${name}" does not exist`);
  return deployment;
}

/** Ready: every desired replica Ready; a Failed replica or a deletion ends the wait with the reason. */
export function deploymentWaitVerdict(d: ModelDeployment): boolean | string {
  const s = d.status;
  const ref = `deployment ${d.spec?.namespace}/${d.spec?.name}`;
  if (d.deletionRequestedAt || s?.phase === DeploymentPhase.DEPLOYMENT_PHASE_DELETING) return `ABORTED: ${ref} is being deleted`;
  const failed = (s?.replicas ?? []).find((r) => r.state === 'Failed');
  if (failed) {
    return `FAILED: replica ${failed.role || 'server'}/${failed.ordinal} of ${ref} failed${failed.message ? `: ${failed.message}` : ''}; see \`gpufleet logs ${d.spec?.name}${nsFlag(d.spec?.namespace ?? 'default')} --replica ${failed.ordinal}\``;
  }
  // A status the controller wrote for an older generation says nothing about the current spec.
  const current = s?.observedGeneration === 0 || (s?.observedGeneration ?? 0) >= d.generation;
  return s?.phase === DeploymentPhase.DEPLOYMENT_PHASE_READY && s.readyReplicas >= s.desiredReplicas && current;
}

async function waitReady(c: Clients, namespace: string, name: string, timeoutS: number, out: Out): Promise<ModelDeployment> {
  out(`waiting up to ${timeoutS}s for it to be Ready...`);
  const d = await waitWithProgress({
    what: `deployment ${namespace}/${name} to be Ready`,
    read: () => getDeployment(c, namespace, name),
    done: deploymentWaitVerdict,
    progress: deploymentProgress,
    timeoutS,
    out,
  });
  const endpoints = d.status?.endpoints ?? [];
  out(`deployment/${namespace}/${name} is Ready${endpoints.length ? `: ${endpoints.join(', ')}` : ''}`);
  if (endpoints[0]) out(`  try: curl ${endpoints[0]}/v1/models`);
  return d;
}

function followHints(spec: ModelDeploymentSpec): string[] {
  const n = `${spec.name}${nsFlag(spec.namespace)}`;
  return [`  watch:    gpufleet get deployment ${n} -w`, `  details:  gpufleet describe deployment ${n}`, `  logs:     gpufleet logs ${n} -f`];
}

/** `gpufleet deploy MODEL`: CreateDeployment, then (with --wait) polls until it is Ready. */
export async function runDeploy(scheduler: string, model: string, flags: DeployFlags, wait: { wait: boolean; timeoutS: number }, out: Out): Promise<void> {
  const spec = deploymentSpecFromFlags(model, flags);
  const clients = connectClients(scheduler, spec.namespace);
  try {
    const { deployment } = await callUnary(clients.deployments, clients.deployments.createDeployment, { spec });
    const created = deployment?.spec ?? spec;
    const role = created.roles[0];
    out(
      `deployment/${created.namespace}/${created.name} created: ${created.engine?.engine ?? 'vllm'} serving ${created.artifact ? `artifact ${created.artifact}` : created.model}, ` +
        `${role?.replicas ?? 0} replica(s) x ${role?.size || 1} pod(s) of ${role ? rolePod(role) : '-'}, queue ${created.localQueue || 'default'}` +
        phaseSuffix(deploymentPhaseName(deployment?.status?.phase)),
    );
    if (wait.wait) await waitReady(clients, created.namespace, created.name, wait.timeoutS, out);
    else out(followHints(created).join('\n'));
  } finally {
    clients.close();
  }
}

/** `gpufleet scale deployment NAME --replicas N [--role R]`. */
export async function runScale(scheduler: string, namespace: string, name: string, replicas: number, role: string | undefined, out: Out): Promise<void> {
  const clients = connectClients(scheduler, namespace);
  try {
    const { deployment } = await callUnary(clients.deployments, clients.deployments.scaleDeployment, { namespace, name, role: role ?? '', replicas });
    const roles = (deployment?.spec?.roles ?? []).map((r) => `${r.role || 'server'} ${r.replicas} replica(s)`).join(', ');
    out(`deployment/${namespace}/${name} scaled${roles ? `: ${roles}` : ''}`);
    out(`  watch:    gpufleet get deployment ${name}${nsFlag(namespace)} -w`);
  } finally {
    clients.close();
  }
}

/** `gpufleet describe deployment NAME`. */
export async function runDescribeDeployment(scheduler: string, namespace: string, name: string, out: Out): Promise<void> {
  const clients = connectClients(scheduler, namespace);
  try {
    out(describeDeployment(await getDeployment(clients, namespace, name)));
  } finally {
    clients.close();
  }
}

/** `gpufleet delete deployment NAME`: its replicas are stopped and their devices released. */
export async function runDeleteDeployment(scheduler: string, namespace: string, name: string, out: Out): Promise<void> {
  const clients = connectClients(scheduler, namespace);
  try {
    await callUnary(clients.deployments, clients.deployments.deleteDeployment, { namespace, name });
    out(`deployment/${namespace}/${name} deleted (its replicas are stopping; it is gone from \`gpufleet get deployments\` once they have)`);
  } finally {
    clients.close();
  }
}
