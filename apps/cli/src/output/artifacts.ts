import { ArtifactPhase, ArtifactSourceKind, type ArtifactNodeStatus, type ArtifactSource, type ModelArtifact } from '@gpufleet/contracts';
import { Column, age } from './format';

/** 1536 → "1.5Ki": bytes in the binary units of `kubectl` (B, Ki, Mi, Gi, Ti). */
export function bytes(value: number): string {
  const units = ['B', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi'];
  let v = value;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v}B` : `${+v.toFixed(1)}${units[i]}`;
}

export function artifactPhaseName(phase: ArtifactPhase | undefined): string {
  switch (phase) {
    case ArtifactPhase.ARTIFACT_PHASE_RESOLVING:
      return 'Resolving';
    case ArtifactPhase.ARTIFACT_PHASE_READY:
      return 'Ready';
    case ArtifactPhase.ARTIFACT_PHASE_DEGRADED:
      return 'Degraded';
    case ArtifactPhase.ARTIFACT_PHASE_FAILED:
      return 'Failed';
    default:
      return 'Unknown';
  }
}

/** `hf://org/name`, `ms://org/name`, the URL, or the path: where the files come from. */
export function sourceLine(source: ArtifactSource | undefined): string {
  if (!source) return '-';
  const at = source.endpoint ? ` (${source.endpoint})` : '';
  switch (source.kind) {
    case ArtifactSourceKind.ARTIFACT_SOURCE_KIND_HUGGINGFACE:
      return `hf://${source.repo}${at}`;
    case ArtifactSourceKind.ARTIFACT_SOURCE_KIND_MODELSCOPE:
      return `ms://${source.repo}${at}`;
    case ArtifactSourceKind.ARTIFACT_SOURCE_KIND_URL:
      return source.url;
    case ArtifactSourceKind.ARTIFACT_SOURCE_KIND_LOCAL:
      return source.path;
    default:
      return '-';
  }
}

/** "2/3 Ready, 1 Downloading 45%": the nodes' copies in one cell. */
export function nodesLine(nodes: readonly ArtifactNodeStatus[]): string {
  if (nodes.length === 0) return '-';
  const ready = nodes.filter((n) => n.state === 'Ready').length;
  const parts = [`${ready}/${nodes.length} Ready`];
  const downloading = nodes.filter((n) => n.state === 'Downloading');
  if (downloading.length === 1) parts.push(`1 Downloading ${downloading[0].percent}%`);
  else if (downloading.length > 1) parts.push(`${downloading.length} Downloading`);
  const failed = nodes.filter((n) => n.state === 'Failed').length;
  if (failed > 0) parts.push(`${failed} Failed`);
  return parts.join(', ');
}

export const artifactColumns: Column<ModelArtifact>[] = [
  { header: 'NAMESPACE', value: (a) => a.spec?.namespace ?? '' },
  { header: 'NAME', value: (a) => a.spec?.name ?? '' },
  { header: 'SOURCE', value: (a) => sourceLine(a.spec?.source) },
  { header: 'REVISION', value: (a) => a.spec?.revision || 'main' },
  { header: 'PHASE', value: (a) => artifactPhaseName(a.status?.phase) },
  { header: 'FILES', value: (a) => (a.status?.manifestDigest ? String(a.status.fileCount) : '-') },
  { header: 'SIZE', value: (a) => (a.status?.manifestDigest ? bytes(a.status.totalBytes) : '-') },
  { header: 'NODES', value: (a) => nodesLine(a.status?.nodes ?? []) },
  { header: 'COMMIT', value: (a) => a.status?.commit.slice(0, 12) || '-', wideOnly: true },
  { header: 'DIGEST', value: (a) => a.status?.manifestDigest.slice(0, 19) || '-', wideOnly: true },
  { header: 'REASON', value: (a) => a.status?.reason || '-', wideOnly: true },
  { header: 'AGE', value: (a) => age(a.createdAt) },
];

function nodeLine(n: ArtifactNodeStatus): string {
  const progress = n.state === 'Ready' ? bytes(n.bytesTotal) : `${bytes(n.bytesDone)}/${bytes(n.bytesTotal)} (${n.percent}%)`;
  const peers = n.peerBytes > 0 ? `, ${bytes(n.peerBytes)} from peers` : '';
  const why = n.reason ? `  ${n.reason}: ${n.message}` : '';
  return `  ${n.node}  ${n.state}  ${progress}${peers}  updated ${n.updatedAt?.toISOString() ?? '-'}${why}`;
}

/** `gpufleet describe artifact`: the spec, what it resolved to, and every node's copy. */
export function describeArtifact(a: ModelArtifact): string {
  const spec = a.spec;
  const status = a.status;
  const lines = [
    `Name:          ${spec?.name}`,
    `Namespace:     ${spec?.namespace}`,
    `Source:        ${sourceLine(spec?.source)}`,
    `Revision:      ${spec?.revision || 'main'}${status?.commit ? ` -> ${status.commit}` : ''}`,
    `Phase:         ${artifactPhaseName(status?.phase)}${status?.reason ? ` (${status.reason}: ${status.message})` : ''}`,
    `Manifest:      ${status?.manifestDigest || '-'}${status?.manifestDigest ? `  ${status.fileCount} files, ${bytes(status.totalBytes)}` : ''}`,
    `Pinned:        ${spec?.pinned ? 'yes (never evicted from a node cache)' : 'no'}`,
  ];
  if (spec?.allowPatterns.length) lines.push(`Allow:         ${spec.allowPatterns.join(' ')}`);
  if (spec?.ignorePatterns.length) lines.push(`Ignore:        ${spec.ignorePatterns.join(' ')}`);
  if (spec?.prefetch.length) lines.push(`Prefetch:      ${spec.prefetch.join(' ')}`);
  if (spec?.expectedDigest) lines.push(`Expected:      ${spec.expectedDigest}`);
  if (spec?.tokenFromSecret?.name) lines.push(`Token:         secret:${spec.tokenFromSecret.name}/${spec.tokenFromSecret.key}`);
  lines.push(`Resolved:      ${status?.resolvedAt?.toISOString() ?? '-'}   Checked: ${status?.checkedAt?.toISOString() ?? '-'}`);
  const nodes = status?.nodes ?? [];
  lines.push(nodes.length ? 'Nodes:' : 'Nodes:         none holds it yet', ...nodes.map(nodeLine));
  return lines.join('\n');
}
