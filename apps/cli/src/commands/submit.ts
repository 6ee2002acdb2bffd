import { readFileSync } from 'fs';
import { callUnary } from '@gpufleet/grpc-kit';
import { adminMetadata } from '../admin';
import { parseManifests } from '../manifests';
import { phaseName } from '../output/workloads';
import { connectClients } from './get';

/** `gpufleet submit -f FILE`: creates or updates every object of the manifest, in order. */
export async function runSubmit(scheduler: string, file: string, out: (t: string) => void): Promise<void> {
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
      } else {
        const { workload } = await callUnary(clients.scheduling, clients.scheduling.submitWorkload, { spec: m.spec });
        out(`workload/${workload?.spec?.namespace}/${workload?.spec?.name} submitted (${phaseName(workload?.status?.phase)})`);
      }
    }
  } finally {
    clients.close();
  }
}
