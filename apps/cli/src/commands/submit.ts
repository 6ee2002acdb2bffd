import { readFileSync } from 'fs';
import { status } from '@grpc/grpc-js';
import { GPUInstanceSpec, ModelDeploymentSpec } from '@gpufleet/contracts';
import { callUnary } from '@gpufleet/grpc-kit';
import { adminMetadata } from '../admin';
import { parseManifests } from '../manifests';
import { deploymentPhaseName } from '../output/deployments';
import { instancePhaseName } from '../output/instances';
import { phaseName } from '../output/workloads';
import { phaseSuffix } from '../output/format';
import { readPublicKeys } from '../ssh/public-keys';
import { Clients, connectClients } from './get';

type Out = (t: string) => void;

const alreadyExists = (err: unknown) => (err as { code?: number }).code === status.ALREADY_EXISTS;

/** Creates the deployment, or replaces the spec of the one of that name (a rolling update). */
async function applyDeployment(c: Clients, spec: ModelDeploymentSpec, out: Out): Promise<void> {
  const ref = `deployment/${spec.namespace}/${spec.name}`;
  try {
    const { deployment } = await callUnary(c.deployments, c.deployments.createDeployment, { spec });
    out(`${ref} created${phaseSuffix(deploymentPhaseName(deployment?.status?.phase))}`);
  } catch (err) {
    if (!alreadyExists(err)) throw err;
    const { deployment } = await callUnary(c.deployments, c.deployments.updateDeployment, { spec });
    out(`${ref} configured (generation ${deployment?.generation ?? '?'}, ${deploymentPhaseName(deployment?.status?.phase)})`);
  }
}

/**
 * Creates the instance (with the submitter's default public key when the manifest names none).
 * An instance is not updated in place; only `stop` is applied to an existing one.
 */
async function applyInstance(c: Clients, manifestSpec: GPUInstanceSpec, out: Out): Promise<void> {
  const spec = manifestSpec.sshPublicKeys.length ? manifestSpec : { ...manifestSpec, sshPublicKeys: readPublicKeys(undefined) };
  const ref = `instance/${spec.namespace}/${spec.name}`;
  try {
    const { instance } = await callUnary(c.instances, c.instances.createInstance, { spec });
    out(`${ref} created${phaseSuffix(instancePhaseName(instance?.status?.phase))}`);
  } catch (err) {
    if (!alreadyExists(err)) throw err;
    const { instance } = await callUnary(c.instances, c.instances.getInstance, { namespace: spec.namespace, name: spec.name });
    if (instance?.spec && instance.spec.stop !== spec.stop) {
      await callUnary(c.instances, c.instances.setInstanceStopped, { namespace: spec.namespace, name: spec.name, stop: spec.stop });
      out(`${ref} ${spec.stop ? 'stopping' : 'starting'}`);
    } else {
      out(`${ref} unchanged (an instance is not updated in place: delete it and submit again to change more than \`stop\`)`);
    }
  }
}

/** `gpufleet submit -f FILE`: creates or updates every object of the manifest, in order. */
export async function runSubmit(scheduler: string, file: string, out: Out): Promise<void> {
  const manifests = parseManifests(file === '-' ? readFileSync(0, 'utf8') : readFileSync(file, 'utf8'), file);
  const clients = connectClients(scheduler);
  try {
    for (const m of manifests) {
      if (m.kind === 'ClusterQueue') {
        const { clusterQueue } = await callUnary(clients.queues, clients.queues.putClusterQueue, { clusterQueue: m.queue }, { metadata: adminMetadata() });
        out(`clusterqueue/${clusterQueue?.name} configured`);
      } else if (m.kind === 'LocalQueue') {
        const { localQueue } = await callUnary(clients.queues, clients.queues.putLocalQueue, { localQueue: m.queue }, { metadata: adminMetadata() });
        out(`localqueue/${localQueue?.namespace}/${localQueue?.name} configured`);
      } else if (m.kind === 'ModelDeployment') {
        await applyDeployment(clients, m.spec, out);
      } else if (m.kind === 'GPUInstance') {
        await applyInstance(clients, m.spec, out);
      } else {
        const { workload } = await callUnary(clients.scheduling, clients.scheduling.submitWorkload, { spec: m.spec });
        out(`workload/${workload?.spec?.namespace}/${workload?.spec?.name} submitted (${phaseName(workload?.status?.phase)})`);
      }
    }
  } finally {
    clients.close();
  }
}
