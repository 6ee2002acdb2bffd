import { ArtifactPhase, ArtifactSourceKind, ModelArtifact } from '@gpufleet/contracts';
import { artifactModelOf, describeArtifact as describeModel, DirectoryRangeReader } from '@gpufleet/model-estimate';
import { writeSparseCheckpoint } from '@gpufleet/testing';
import { renderTable } from './format';
import { artifactColumns, bytes, describeArtifact, nodesLine } from './artifacts';

const artifact = ModelArtifact.fromPartial({
  spec: { name: 'llama', namespace: 'team-a', source: { kind: ArtifactSourceKind.ARTIFACT_SOURCE_KIND_HUGGINGFACE, repo: 'meta-llama/Llama-3.1-8B' }, revision: '' },
  status: {
    phase: ArtifactPhase.ARTIFACT_PHASE_READY,
    commit: '0123456789abcdef0123',
    manifestDigest: 'sha256:' + 'ab'.repeat(32),
    fileCount: 7,
    totalBytes: 16_060_522_240,
    nodes: [
      { node: 'gpu-0', state: 'Ready', bytesDone: 16_060_522_240, bytesTotal: 16_060_522_240, percent: 100, peerBytes: 0 },
      { node: 'gpu-1', state: 'Downloading', bytesDone: 8_030_261_120, bytesTotal: 16_060_522_240, percent: 50, peerBytes: 4_000_000_000 },
      { node: 'gpu-2', state: 'Failed', reason: 'InsufficientCapacity', message: 'needs 15Gi, 3Gi free above the high watermark' },
    ],
  },
});

describe('artifacts in the CLI', () => {
  it('lists source, phase, files, size and the nodes in one row', () => {
    const table = renderTable([artifact], artifactColumns, false);
    expect(table.split('\n')[0]).toMatch(/^NAMESPACE\s+NAME\s+SOURCE\s+REVISION\s+PHASE\s+FILES\s+SIZE\s+NODES\s+AGE$/);
    expect(table).toContain('hf://meta-llama/Llama-3.1-8B');
    expect(table).toContain('Ready');
    expect(table).toContain('15Gi');
    expect(nodesLine(artifact.status!.nodes)).toBe('1/3 Ready, 1 Downloading 50%, 1 Failed');
  });

  it('describes every node with its progress, its peer bytes and why it failed', () => {
    const text = describeArtifact(artifact);
    expect(text).toContain('Revision:      main -> 0123456789abcdef0123');
    expect(text).toContain('gpu-1  Downloading  7.5Gi/15Gi (50%), 3.7Gi from peers');
    expect(text).toContain('gpu-2  Failed  0B/0B (0%)');
    expect(text).toContain('InsufficientCapacity: needs 15Gi, 3Gi free above the high watermark');
  });

  it('shows the model read from the artifact and an estimate at its max context, or why there is none', async () => {
    // Llama-3.1-8B as model delivery describes it: config.json and the four shards' safetensors headers.
    const checkpoint = writeSparseCheckpoint('llama-3.1-8b', { dtype: 'BF16', shards: 4, totalSize: 16_060_522_496 });
    const model = artifactModelOf(await describeModel(new DirectoryRangeReader(checkpoint.dir), checkpoint.files));
    checkpoint.dispose();
    const digest = artifact.status!.manifestDigest;
    const described = describeArtifact({ ...artifact, status: { ...artifact.status!, model, modelDigest: digest } });
    expect(described).toContain('Model:         llama, 32 layers, hidden 4096, 32 heads, 8 KV heads of 128, max context 131072');
    expect(described).toMatch(/Weights: {7}15Gi from safetensors-headers \(BF16 15Gi\)$/m);
    // 131072 tokens × 128 KiB of bf16 K and V per token (2 × 32 layers × 8 KV heads × 128 × 2 bytes) = 16 GiB.
    expect(described).toMatch(
      /Estimate: {6}at 131072 tokens x 1 sequence, tensor-parallel 1, 0\.9 utilisation: weights 15\.0 GiB \+ KV cache 16\.0 GiB \+ activations \d+\.\d GiB \+ CUDA graphs \d+\.\d GiB = \d+\.\d GiB per GPU/,
    );
    // Not described yet (or described from another manifest), and not a model at all.
    expect(describeArtifact(artifact)).toContain('Model:         being described (config.json and weight headers)');
    expect(describeArtifact({ ...artifact, status: { ...artifact.status!, model, modelDigest: 'sha256:old' } })).toContain('Model:         being described');
    const notModel = describeArtifact({ ...artifact, status: { ...artifact.status!, modelDigest: digest, estimateError: 'MISSING_MODEL_FILES: no config.json and no .gguf file' } });
    expect(notModel).toContain('Model:         not described: MISSING_MODEL_FILES: no config.json and no .gguf file');
    expect(notModel).not.toContain('Estimate:');
  });

  it('writes bytes in binary units', () => {
    expect([bytes(0), bytes(1023), bytes(1536), bytes(5 * 1024 ** 3)]).toEqual(['0B', '1023B', '1.5Ki', '5Gi']);
  });
});
