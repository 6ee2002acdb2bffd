import { breakdownLine, gib } from './artifacts';
import { DeploymentPhase, DeploymentRole, EngineConfig, ModelDeployment, ModelSizing, ReplicaStatus } from '@gpufleet/contracts';
import { Column, age, renderTable } from './format';
import { podRequest } from './workloads';
import { envLine } from './secrets';

export function deploymentPhaseName(p: DeploymentPhase | undefined): string {
  switch (p) {
    case DeploymentPhase.DEPLOYMENT_PHASE_STARTING: return 'Starting';
    case DeploymentPhase.DEPLOYMENT_PHASE_READY: return 'Ready';
    case DeploymentPhase.DEPLOYMENT_PHASE_DEGRADED: return 'Degraded';
    case DeploymentPhase.DEPLOYMENT_PHASE_DELETING: return 'Deleting';
    default: return 'Unknown';
  }
}

/** "vllm", "vllm@0.11.0". */
export function engineName(e: EngineConfig | undefined): string {
  if (!e?.engine) return '-';
  return e.version ? `${e.engine}@${e.version}` : e.engine;
}

/** Up to `max` items joined with ",", then "+N". */
export function joinSome(items: readonly string[], max: number): string {
  if (items.length === 0) return '-';
  return items.length > max ? `${items.slice(0, max).join(',')},+${items.length - max}` : items.join(',');
}

/** One pod of a role: its InstanceType, or "1x 8c 64Gi"-style resources. */
export function rolePod(r: DeploymentRole): string {
  if (r.instanceType) return r.instanceType;
  const res = r.resources;
  return `${podRequest(res)} ${res?.vcpu ?? 0}c ${res?.memoryMib ?? 0}Mi`;
}

/** "server 2x(1x)" per role, "+"-joined: replicas, pods per replica when more than one, per-pod request. */
function roles(d: ModelDeployment): string {
  return (d.spec?.roles ?? [])
    .map((r) => `${r.role || 'server'} ${r.replicas}x${r.size > 1 ? `${r.size}pods` : ''}(${r.instanceType || podRequest(r.resources)})`)
    .join('+') || '-';
}

export const deploymentColumns: Column<ModelDeployment>[] = [
  { header: 'NAMESPACE', value: (d) => d.spec?.namespace ?? '' },
  { header: 'NAME', value: (d) => d.spec?.name ?? '' },
  { header: 'MODEL', value: (d) => d.spec?.model || '-' },
  { header: 'ENGINE', value: (d) => engineName(d.spec?.engine) },
  { header: 'QUEUE', value: (d) => d.spec?.localQueue || '-', wideOnly: true },
  { header: 'ROLES', value: roles, wideOnly: true },
  { header: 'PHASE', value: (d) => deploymentPhaseName(d.status?.phase) },
  { header: 'READY', value: (d) => `${d.status?.readyReplicas ?? 0}/${d.status?.desiredReplicas ?? 0}` },
  { header: 'UPDATED', value: (d) => String(d.status?.updatedReplicas ?? 0) },
  { header: 'ENDPOINTS', value: (d) => joinSome(d.status?.endpoints ?? [], 2) },
  { header: 'GENERATION', value: (d) => `${d.status?.observedGeneration ?? 0}/${d.generation}`, wideOnly: true },
  { header: 'AGE', value: (d) => age(d.createdAt) },
];

const replicaColumns: Column<ReplicaStatus>[] = [
  { header: 'ROLE', value: (r) => r.role || '-' },
  { header: 'ORDINAL', value: (r) => String(r.ordinal) },
  { header: 'STATE', value: (r) => `${r.state || 'Unknown'}${r.updated ? '' : ' (old)'}` },
  { header: 'NODE', value: (r) => r.node || '-' },
  { header: 'ENDPOINT', value: (r) => r.endpoint || '-' },
  { header: 'DEVICES', value: (r) => r.acceleratorIds.join(',') || '-' },
  { header: 'RESTARTS', value: (r) => String(r.restarts) },
  { header: 'MESSAGE', value: (r) => r.message || '' },
];

function indent(text: string, by = '  '): string {
  return text.replace(/^/gm, by);
}


/** `gpufleet describe deployment NAME`: spec summary, status, conditions and one row per replica. */
export function describeDeployment(d: ModelDeployment, now = Date.now()): string {
  const spec = d.spec;
  const status = d.status;
  const e = spec?.engine;
  const tuning = [
    e?.mode && `mode ${e.mode}`,
    e?.speculative?.method && `speculative ${e.speculative.method}${e.speculative.draftModel ? ` (draft ${e.speculative.draftModel})` : ''}`,
    e?.kvOffload?.connector && `kv offload ${e.kvOffload.connector}`,
  ].filter(Boolean);
  const lines = [
    `Name:          ${spec?.name ?? ''}`,
    `Namespace:     ${spec?.namespace ?? ''}`,
    `Model:         ${spec?.model ?? ''}${spec?.servedModelName ? `   (served as "${spec.servedModelName}")` : ''}`,
    `Engine:        ${engineName(e)}${tuning.length ? `, ${tuning.join(', ')}` : ''}`,
  ];
  // The weights come from each node's cache (see the WeightsReady condition below).
  if (spec?.artifact) lines.splice(3, 0, `Artifact:      ${spec.artifact}   (each node's verified copy; gpufleet describe artifact ${spec.artifact}${spec.namespace && spec.namespace !== 'default' ? ` -n ${spec.namespace}` : ''})`);
  if (spec?.sizing) lines.push(`Sizing:        ${sizingLine(spec.sizing)}`);
  if (e?.customCommand) lines.push(`Command:       ${e.customCommand}`);
  if (e?.extraArgs.length) lines.push(`Engine args:   ${e.extraArgs.join(' ')}`);
  if (e && Object.keys(e.env).length + Object.keys(e.envFromSecret ?? {}).length) lines.push(`Engine env:    ${envLine(e.env, e.envFromSecret)}`);
  lines.push(
    `LocalQueue:    ${spec?.localQueue || 'default'}   Priority: ${spec?.priority ?? 0}`,
    `Phase:         ${deploymentPhaseName(status?.phase)}   ${status?.readyReplicas ?? 0}/${status?.desiredReplicas ?? 0} ready, ${status?.updatedReplicas ?? 0} updated`,
    `Generation:    ${d.generation} (observed ${status?.observedGeneration ?? 0})${status?.templateHash ? `   template ${status.templateHash}` : ''}`,
    `Created:       ${d.createdAt ? `${d.createdAt.toISOString()} (${age(d.createdAt, now)} ago)` : '-'}`,
  );
  if (d.deletionRequestedAt) lines.push(`Deleting:      requested ${d.deletionRequestedAt.toISOString()}`);
  lines.push(`Endpoints:     ${(status?.endpoints ?? []).join(', ') || '-'}`);
  lines.push('Roles:');
  for (const r of spec?.roles ?? []) {
    const topo = [r.topology?.requiredLevel && `required ${r.topology.requiredLevel}`, r.topology?.preferredLevel && `preferred ${r.topology.preferredLevel}`].filter(Boolean);
    lines.push(`  ${r.role || 'server'}: ${r.replicas} replica(s) x ${r.size || 1} pod(s), each ${rolePod(r)}${topo.length ? `, ${topo.join(', ')}` : ''}`);
    if (r.extraArgs.length) lines.push(`    args: ${r.extraArgs.join(' ')}`);
    if (Object.keys(r.env).length + Object.keys(r.envFromSecret ?? {}).length) lines.push(`    env:  ${envLine(r.env, r.envFromSecret)}`);
  }
  const conditions = status?.conditions ?? [];
  if (conditions.length) {
    lines.push('Conditions:');
    lines.push(indent(renderTable(conditions, [
      { header: 'TYPE', value: (c) => c.type },
      { header: 'STATUS', value: (c) => (c.status ? 'True' : 'False') },
      { header: 'REASON', value: (c) => c.reason || '-' },
      { header: 'SINCE', value: (c) => age(c.lastTransition, now) },
      { header: 'MESSAGE', value: (c) => c.message },
    ], false)));
  }
  for (const m of status?.memory ?? []) {
    lines.push(
      `Memory:        ${m.role} on ${m.instanceType}: tensor-parallel ${m.tensorParallelSize}, ${m.contextLength} tokens x ${m.concurrency} sequences, ${m.gpuMemoryUtilization} utilisation, ${m.fits ? 'fits' : 'does not fit'} ${gib(m.gpuMemoryBytes)} GPUs`,
      `               ${breakdownLine({ weights: m.weightsBytes, kvCache: m.kvCacheBytes, activations: m.activationsBytes, cudaGraphs: m.cudaGraphsBytes, total: m.totalBytes })}`,
    );
  }
  const replicas = status?.replicas ?? [];
  lines.push(replicas.length ? `Replicas:\n${indent(renderTable(replicas, replicaColumns, false))}` : 'Replicas:      none yet');
  if (spec?.labels && Object.keys(spec.labels).length) lines.push(`Labels:        ${envLine(spec.labels)}`);
  return lines.join('\n');
}

/** `spec.sizing` in words, with what an unset field falls back to. */
export function sizingLine(s: ModelSizing): string {
  return [
    `context ${s.contextLength || "the model's own"}`,
    `${s.concurrency || 1} sequence(s)`,
    `utilisation ${s.gpuMemoryUtilization || "the preset's"}`,
    `KV cache ${s.kvCacheDtype || 'auto'}`,
    ...(s.autoTensorParallel ? ['auto tensor parallel'] : []),
  ].join(', ');
}

/** One line of `deploy --wait` progress: phase, ready count and each replica that is not Ready. */
export function deploymentProgress(d: ModelDeployment): string {
  const s = d.status;
  const waiting = (s?.replicas ?? [])
    .filter((r) => r.state !== 'Ready')
    .map((r) => `${r.role || 'server'}/${r.ordinal} ${r.state || 'Unknown'}${r.message ? `: ${r.message}` : ''}`);
  return `${deploymentPhaseName(s?.phase)}, ${s?.readyReplicas ?? 0}/${s?.desiredReplicas ?? 0} ready${waiting.length ? `; ${waiting.join('; ')}` : ''}`;
}
