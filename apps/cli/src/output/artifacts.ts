import { ArtifactPhase, ArtifactSourceKind, type ArtifactNodeStatus, type ArtifactSource, type ModelArtifact } from '@gpufleet/contracts';
import { estimateMemory, GiB, modelDescriptionOf, type MemoryEstimate } from '@gpufleet/model-estimate';
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
  lines.push(...modelLines(a));
  const nodes = status?.nodes ?? [];
  lines.push(nodes.length ? 'Nodes:' : 'Nodes:         none holds it yet', ...nodes.map(nodeLine));
  return lines.join('\n');
}

/** Bytes as "79.6 GiB", as the memory estimates are printed. */
export const gib = (value: number): string => `${(value / GiB).toFixed(1)} GiB`;

/** One estimate's per-GPU breakdown, as `describe` prints it for artifacts and deployments. */
export function breakdownLine(e: Pick<MemoryEstimate['perGpu'], 'weights' | 'kvCache' | 'activations' | 'cudaGraphs' | 'total'>): string {
  return `weights ${gib(e.weights)} + KV cache ${gib(e.kvCache)} + activations ${gib(e.activations)} + CUDA graphs ${gib(e.cudaGraphs)} = ${gib(e.total)} per GPU (after the utilisation share)`;
}

/** The model read from the artifact, and an example estimate at its own max context (one sequence, TP 1, vLLM's defaults). */
function modelLines(a: ModelArtifact): string[] {
  const status = a.status;
  if (status?.estimateError) return [`Model:         not described: ${status.estimateError}`];
  const model = modelDescriptionOf(status?.model);
  if (!model || status?.modelDigest !== status?.manifestDigest) return status?.manifestDigest ? ['Model:         being described (config.json and weight headers)'] : [];
  const s = model.shape;
  const dtypes = Object.entries(model.weights.byDtype ?? {}).map(([dtype, size]) => `${dtype} ${bytes(size)}`);
  const attention = s.mla ? `MLA (kv_lora_rank ${s.mla.kvLoraRank})` : `${s.attentionHeads} heads, ${s.kvHeads} KV heads of ${s.headDim}`;
  const lines = [
    `Model:         ${s.architecture}, ${s.layers} layers, hidden ${s.hiddenSize}, ${attention}${s.moe ? `, MoE ${s.moe.expertsPerToken} of ${s.moe.experts} experts` : ''}${s.slidingWindow ? `, sliding window ${s.slidingWindow}` : ''}${s.maxContextLength ? `, max context ${s.maxContextLength}` : ''}`,
    `Weights:       ${bytes(model.weights.bytes)} from ${model.weights.source}${dtypes.length ? ` (${dtypes.join(', ')})` : ''}${model.weights.parameters ? `, ${model.weights.parameters} parameters` : ''}`,
  ];
  if (s.maxContextLength) {
    const e = estimateMemory(model, {});
    lines.push(`Estimate:      at ${e.contextLength} tokens x 1 sequence, tensor-parallel 1, ${e.gpuMemoryUtilization} utilisation: ${breakdownLine(e.perGpu)}`);
  }
  return lines;
}
