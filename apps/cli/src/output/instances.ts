import { GPUInstance, InstancePhase } from '@gpufleet/contracts';
import { Column, age } from './format';
import { podRequest } from './workloads';
import { envLine } from './secrets';

export function instancePhaseName(p: InstancePhase | undefined): string {
  switch (p) {
    case InstancePhase.INSTANCE_PHASE_PENDING: return 'Pending';
    case InstancePhase.INSTANCE_PHASE_STARTING: return 'Starting';
    case InstancePhase.INSTANCE_PHASE_RUNNING: return 'Running';
    case InstancePhase.INSTANCE_PHASE_STOPPED: return 'Stopped';
    case InstancePhase.INSTANCE_PHASE_FAILED: return 'Failed';
    case InstancePhase.INSTANCE_PHASE_DELETING: return 'Deleting';
    default: return 'Unknown';
  }
}

/** The variable that tells a vendor's runtime which devices it sees, most telling first. */
const VISIBILITY_VARS = ['CUDA_VISIBLE_DEVICES', 'ROCR_VISIBLE_DEVICES', 'ASCEND_RT_VISIBLE_DEVICES', 'HIP_VISIBLE_DEVICES', 'NVIDIA_VISIBLE_DEVICES'];

/** "CUDA_VISIBLE_DEVICES=0,1" from the devices environment; "-" when it exposes no device. */
export function devicesSummary(env: Record<string, string> | undefined): string {
  const e = env ?? {};
  const name = VISIBILITY_VARS.find((v) => e[v] && e[v] !== 'none');
  return name ? `${name}=${e[name]}` : '-';
}

/** "user@host:port", or "-" before the instance has an address. */
export function sshAddress(i: GPUInstance): string {
  const s = i.status;
  if (!s?.sshHost || !s.sshPort) return '-';
  return `${s.sshUser || 'root'}@${s.sshHost}:${s.sshPort}`;
}

/** Its InstanceType, or "1x 8c 65536Mi"-style resources. */
export function instanceRequest(i: GPUInstance): string {
  if (i.spec?.instanceType) return i.spec.instanceType;
  const r = i.spec?.resources;
  return `${podRequest(r)} ${r?.vcpu ?? 0}c ${r?.memoryMib ?? 0}Mi`;
}

export const instanceColumns: Column<GPUInstance>[] = [
  { header: 'NAMESPACE', value: (i) => i.spec?.namespace ?? '' },
  { header: 'NAME', value: (i) => i.spec?.name ?? '' },
  { header: 'QUEUE', value: (i) => i.spec?.localQueue || '-', wideOnly: true },
  { header: 'REQUEST', value: instanceRequest, wideOnly: true },
  { header: 'PHASE', value: (i) => instancePhaseName(i.status?.phase) },
  { header: 'NODE', value: (i) => i.status?.node || '-' },
  { header: 'DEVICES', value: (i) => devicesSummary(i.status?.devicesEnv) },
  { header: 'SSH', value: sshAddress },
  { header: 'MESSAGE', value: (i) => i.status?.message || '', wideOnly: true },
  { header: 'AGE', value: (i) => age(i.createdAt) },
];

/** The `gpufleet ssh` command for an instance, with -n when it is not in "default". */
export function sshHint(namespace: string, name: string): string {
  return `gpufleet ssh ${name}${namespace === 'default' ? '' : ` -n ${namespace}`}`;
}

/** `gpufleet describe instance NAME`. */
export function describeInstance(i: GPUInstance, now = Date.now()): string {
  const spec = i.spec;
  const s = i.status;
  const ns = spec?.namespace ?? 'default';
  const name = spec?.name ?? '';
  const lines = [
    `Name:          ${name}`,
    `Namespace:     ${ns}`,
    `LocalQueue:    ${spec?.localQueue || 'default'}   Priority: ${spec?.priority ?? 0}`,
    `Request:       ${instanceRequest(i)}`,
  ];
  if (spec?.command) lines.push(`Command:       ${spec.command}`);
  if (spec?.image) lines.push(`Image:         ${spec.image}`);
  if (spec && Object.keys(spec.env).length + Object.keys(spec.envFromSecret ?? {}).length) lines.push(`Env:           ${envLine(spec.env, spec.envFromSecret)}`);
  const keys = spec?.sshPublicKeys ?? [];
  lines.push(`SSH keys:      ${keys.length ? keys.map((k) => k.split(/\s+/)[2] ?? k.split(/\s+/)[0]).join(', ') : '-'}`);
  lines.push(
    `Phase:         ${instancePhaseName(s?.phase)}${spec?.stop ? ' (stop requested)' : ''}${s?.message ? `   ${s.message}` : ''}`,
    `Workload:      ${s?.workload || '-'}`,
    `Node:          ${s?.node || '-'}`,
    `Devices:       ${(s?.acceleratorIds ?? []).join(',') || '-'}`,
    `Devices env:   ${Object.entries(s?.devicesEnv ?? {}).map(([k, v]) => `${k}=${v}`).join(' ') || '-'}`,
    `SSH:           ${sshAddress(i)}${s?.phase === InstancePhase.INSTANCE_PHASE_RUNNING ? `   (connect: ${sshHint(ns, name)})` : ''}`,
    `Host key:      ${s?.sshHostKey || '-'}`,
    `Logs:          ${s?.logsUrl || '-'}`,
    `Created:       ${i.createdAt ? `${i.createdAt.toISOString()} (${age(i.createdAt, now)} ago)` : '-'}`,
  );
  if (i.deletionRequestedAt) lines.push(`Deleting:      requested ${i.deletionRequestedAt.toISOString()}`);
  if (spec?.labels && Object.keys(spec.labels).length) lines.push(`Labels:        ${Object.entries(spec.labels).map(([k, v]) => `${k}=${v}`).join(' ')}`);
  return lines.join('\n');
}

/** One line of `create instance --wait` progress. */
export function instanceProgress(i: GPUInstance): string {
  const s = i.status;
  return `${instancePhaseName(s?.phase)}${s?.node ? ` on ${s.node}` : ''}${s?.message ? `: ${s.message}` : ''}`;
}
