import { stringify } from 'yaml';
import { PodPlacement } from '@gpufleet/contracts';
import { callUnary } from '@gpufleet/grpc-kit';
import { phaseName, podRequest } from '../output/workloads';
import { connectClients } from './get';

function placementLine(p: PodPlacement): string {
  const devices = p.partition
    ? `${p.partition.acceleratorId} mig ${p.partition.profile}@${p.partition.start}`
    : p.sharedTokens
      ? `${p.acceleratorIds.join(',')} (${p.sharedTokens} tokens)`
      : p.sliceMemoryMib
        ? `${p.acceleratorIds.join(',')} (${p.sliceMemoryMib}Mi, ${p.sliceCoresPercent}% cores)`
        : p.acceleratorIds.join(',') || '-';
  return `  ${p.podSet}[${p.replica}].${p.pod}  ${p.node}  ${devices}  ${p.vcpu}c ${p.memoryMib}Mi`;
}

/** `gpufleet describe workload NAME`: spec, status, placements and, when pending, why. */
export async function runDescribeWorkload(scheduler: string, namespace: string, name: string, out: (t: string) => void): Promise<void> {
  const clients = connectClients(scheduler, namespace);
  try {
    const { workload, explanation } = await callUnary(clients.scheduling, clients.scheduling.explainPending, { namespace, name });
    const spec = workload?.spec;
    const status = workload?.status;
    const lines = [
      `Name:          ${spec?.name}`,
      `Namespace:     ${spec?.namespace}`,
      `LocalQueue:    ${spec?.localQueue}   ClusterQueue: ${status?.clusterQueue || '-'}   Pool: ${status?.pool || '-'}`,
      `Priority:      ${spec?.priority ?? 0}`,
      `Phase:         ${phaseName(status?.phase)}${status?.finishReason ? ` (${status.finishReason})` : ''}`,
      `Credits:       ${status?.credits ?? 0}/h`,
      `Submitted:     ${status?.submittedAt?.toISOString() ?? '-'}`,
      `Admitted:      ${status?.admittedAt?.toISOString() ?? '-'}`,
      'Pod sets:',
      ...(spec?.podSets ?? []).map(
        (p) => `  ${p.name}: ${p.count} replica(s) x ${p.size} pod(s), each ${podRequest(p.resources)} ${p.resources?.vcpu ?? 0}c ${p.resources?.memoryMib ?? 0}Mi` +
          (p.topology?.requiredLevel ? `, required ${p.topology.requiredLevel}` : '') +
          (p.topology?.preferredLevel ? `, preferred ${p.topology.preferredLevel}` : ''),
      ),
    ];
    if (status?.placements.length) lines.push('Placements:', ...status.placements.map(placementLine));
    if (explanation && explanation.gates.length > 0) {
      lines.push(`Pending:       position ${explanation.queuePosition} in ${status?.clusterQueue}`);
      for (const g of explanation.gates) lines.push(`  ${g.passed ? 'ok  ' : 'FAIL'} ${g.gate}${g.reason ? `: ${g.reason}` : ''}${g.message ? ` - ${g.message}` : ''}`);
      if (explanation.largestFreeBlock) lines.push(`  largest free block: ${explanation.largestFreeBlock}`);
    }
    if (spec?.labels && Object.keys(spec.labels).length) lines.push('Labels:', stringify(spec.labels).trimEnd().replace(/^/gm, '  '));
    out(lines.join('\n'));
  } finally {
    clients.close();
  }
}
