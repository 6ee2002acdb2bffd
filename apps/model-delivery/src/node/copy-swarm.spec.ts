import { ArtifactNodeStatus } from '@gpufleet/contracts';
import { blobIndex, fetchersOf, holdersOf } from './copy-swarm';

const M = 'sha256:' + 'm'.repeat(64);
const A = 'sha256:' + 'a'.repeat(64);
const B = 'sha256:' + 'b'.repeat(64);
const files = [{ digest: A }, { digest: B }, { digest: A }];
const manifests = new Map([[M, blobIndex(files)]]);

function copy(node: string, fields: Partial<ArtifactNodeStatus>): ArtifactNodeStatus {
  return ArtifactNodeStatus.fromPartial({ node, manifestDigest: M, peerUrl: `http://${node}:7470`, ...fields });
}

describe('peers found in artifact-nodes records', () => {
  it('names a blob by its first index in the manifest', () => {
    expect([...blobIndex(files)]).toEqual([
      [A, 0],
      [B, 1],
    ]);
  });

  it('finds holders in Ready copies and in Downloading copies that list the file verified, never itself or another manifest', () => {
    const records = [
      copy('self', { state: 'Ready' }),
      copy('ready', { state: 'Ready' }),
      copy('half', { state: 'Downloading', verifiedFiles: [1] }),
      copy('none', { state: 'Downloading', verifiedFiles: [] }),
      copy('failed', { state: 'Failed', verifiedFiles: [0, 1] }),
      copy('no-url', { state: 'Ready', peerUrl: '' }),
      copy('other', { state: 'Ready', manifestDigest: 'sha256:' + 'o'.repeat(64) }),
    ];
    expect(holdersOf(records, 'self', manifests, A)).toEqual(['http://ready:7470']);
    expect(holdersOf(records, 'self', manifests, B)).toEqual(['http://ready:7470', 'http://half:7470']);
  });

  it('finds the nodes fetching a file from the origin, with their claim time and bytes', () => {
    const at = new Date(1_700_000_000_000);
    const records = [
      copy('n2', { state: 'Downloading', fetchingFiles: [{ file: 1, claimedAt: at, bytesDone: 4096 }] }),
      copy('n3', { state: 'Ready', fetchingFiles: [{ file: 1, claimedAt: at, bytesDone: 1 }] }),
      copy('self', { state: 'Downloading', fetchingFiles: [{ file: 1, claimedAt: at, bytesDone: 0 }] }),
    ];
    expect(fetchersOf(records, 'self', manifests, B)).toEqual([{ peer: 'n2', claimedAt: at.getTime(), bytesDone: 4096 }]);
    expect(fetchersOf(records, 'self', manifests, A)).toEqual([]);
  });
});
