import { ArtifactPhase, ArtifactSourceKind, ModelArtifact } from '@gpufleet/contracts';
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

  it('writes bytes in binary units', () => {
    expect([bytes(0), bytes(1023), bytes(1536), bytes(5 * 1024 ** 3)]).toEqual(['0B', '1023B', '1.5Ki', '5Gi']);
  });
});
