import { GPUInstance, ModelDeployment, ReplicaStatus } from '@gpufleet/contracts';
import { deploymentPhaseName } from '../output/deployments';
import { instancePhaseName } from '../output/instances';

/** One log to fetch: its label (a replica "server/0", or the instance name) and URL. */
export interface LogSource {
  label: string;
  url: string;
}

export interface ReplicaSelection {
  role?: string;
  /** Default 0 (unless `all`). */
  replica?: number;
  all?: boolean;
}

const label = (r: ReplicaStatus) => `${r.role || 'server'}/${r.ordinal}`;

function noLogsYet(what: string, state: string, message: string): string {
  return `${what} has no logs yet (${state}${message ? `: ${message}` : ''})`;
}

/**
 * The replica logs `gpufleet logs DEPLOYMENT` prints: one replica (ordinal 0 unless --replica,
 * of --role when several roles have that ordinal), or with `all` every replica that has a log.
 * `skipped` lists the replicas `all` left out, each with why.
 */
export function deploymentLogSources(d: ModelDeployment, sel: ReplicaSelection): { sources: LogSource[]; skipped: string[] } {
  const ref = `deployment ${d.spec?.namespace}/${d.spec?.name}`;
  if (sel.all && sel.replica !== undefined) throw new Error('--all and --replica both choose replicas; pass one');
  const replicas = (d.status?.replicas ?? []).filter((r) => sel.role === undefined || r.role === sel.role);
  if (sel.role !== undefined && replicas.length === 0) {
    const roles = [...new Set((d.status?.replicas ?? []).map((r) => r.role))];
    throw new Error(`--role ${sel.role}: ${ref} has no replica of that role${roles.length ? ` (roles: ${roles.join(', ')})` : ''}`);
  }
  if (replicas.length === 0) throw new Error(`${ref} has no replicas yet (phase ${deploymentPhaseName(d.status?.phase)}); see \`gpufleet describe deployment ${d.spec?.name}\``);

  if (sel.all) {
    const withLogs = replicas.filter((r) => r.logsUrl);
    const skipped = replicas.filter((r) => !r.logsUrl).map((r) => noLogsYet(label(r), r.state || 'Unknown', r.message));
    if (withLogs.length === 0) throw new Error(`no replica of ${ref} has logs yet: ${skipped.join('; ')}`);
    return { sources: withLogs.map((r) => ({ label: label(r), url: r.logsUrl })), skipped };
  }

  const ordinal = sel.replica ?? 0;
  const hits = replicas.filter((r) => r.ordinal === ordinal);
  if (hits.length === 0) {
    throw new Error(`--replica ${ordinal}: ${ref} has no replica ${ordinal}${sel.role ? ` of role ${sel.role}` : ''} (replicas: ${replicas.map(label).join(', ')})`);
  }
  if (hits.length > 1) throw new Error(`${ref} has replica ${ordinal} in roles ${hits.map((r) => r.role).join(', ')}; pick one with --role`);
  const r = hits[0];
  if (!r.logsUrl) throw new Error(noLogsYet(`replica ${label(r)} of ${ref}`, r.state || 'Unknown', r.message));
  return { sources: [{ label: label(r), url: r.logsUrl }], skipped: [] };
}

/** The log of an instance (its optional command and sshd). */
export function instanceLogSource(i: GPUInstance): LogSource {
  const ref = `instance ${i.spec?.namespace}/${i.spec?.name}`;
  if (!i.status?.logsUrl) throw new Error(noLogsYet(ref, instancePhaseName(i.status?.phase), i.status?.message ?? ''));
  return { label: i.spec?.name ?? '', url: i.status.logsUrl };
}

/** The log URL with `tail=N`, `follow=1` and `process=sshd` added to whatever query it already has. */
export function logsRequestUrl(base: string, o: { tail?: number; follow?: boolean; process?: 'sshd' }): string {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new Error(`the server reported a log URL that is not a URL: ${JSON.stringify(base)}`);
  }
  if (o.tail !== undefined) url.searchParams.set('tail', String(o.tail));
  if (o.follow) url.searchParams.set('follow', '1');
  if (o.process) url.searchParams.set('process', o.process);
  return url.toString();
}

/** Puts `prefix` before every line of a stream cut into arbitrary chunks. */
export class LinePrefixer {
  private partial = '';

  constructor(private readonly prefix: string) {}

  /** The complete lines in `chunk` (and before it), prefixed; a trailing partial line is held back. */
  push(chunk: string): string {
    const text = this.partial + chunk;
    const cut = text.lastIndexOf('\n');
    if (cut < 0) {
      this.partial = text;
      return '';
    }
    this.partial = text.slice(cut + 1);
    return text
      .slice(0, cut)
      .split('\n')
      .map((line) => `${this.prefix}${line}\n`)
      .join('');
  }

  /** The held-back partial line, if any, prefixed and ended. */
  flush(): string {
    const rest = this.partial;
    this.partial = '';
    return rest ? `${this.prefix}${rest}\n` : '';
  }
}
