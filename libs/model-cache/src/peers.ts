import type { BlobDigest } from './manifest';

/** Another node's peer server (servePeerBlobs) and the bearer token it accepts. */
export interface PeerEndpoint {
  /** base URL, e.g. http://10.0.0.7:7470 */
  readonly url: string;
  readonly token: string;
}

/** Who says they hold a blob verified; asked once per blob before its download starts. */
export interface PeerDirectory {
  holders(digest: BlobDigest): Promise<readonly PeerEndpoint[]> | readonly PeerEndpoint[];
}

/** Every listed peer is tried for every blob; one that lacks it answers 404 and is skipped for that blob. */
export function staticPeers(peers: readonly PeerEndpoint[]): PeerDirectory {
  return { holders: () => peers };
}

export function peerBlobUrl(peer: PeerEndpoint, d: BlobDigest): string {
  return `${peer.url.replace(/\/+$/, '')}/blobs/${d.alg}/${d.hex}`;
}
