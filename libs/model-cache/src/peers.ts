import type { BlobDigest } from './manifest';

/** Another node's peer server (servePeerBlobs) and the bearer token it accepts. */
export interface PeerEndpoint {
  /** base URL, e.g. http://10.0.0.7:7470 */
  readonly url: string;
  readonly token: string;
}

/** Another node fetching a blob from its origins right now, as its owner last published it. */
export interface BlobFetcher {
  /** the node's name */
  readonly peer: string;
  /** ms since the epoch when it started; the earliest claim (then the lowest name) keeps a blob when two nodes start together */
  readonly claimedAt: number;
  /** bytes of the blob it holds so far: while this moves, the fetch is alive */
  readonly bytesDone: number;
}

/** What this cache does with a blob, told to its directory so that its peers can see it. */
export type BlobActivity =
  /** fetching from the origins (a claim); sent again while its bytes move */
  | { readonly state: 'Fetching'; readonly digest: BlobDigest; readonly claimedAt: number; readonly bytesDone: number }
  /** verified and in blobs/: the peer server serves it from now on */
  | { readonly state: 'Verified'; readonly digest: BlobDigest }
  /** no longer fetching it from the origins (it gave way to an earlier claim, or the delivery ended) */
  | { readonly state: 'Idle'; readonly digest: BlobDigest };

/**
 * Who holds a blob verified, and (optionally) who is fetching it from its origin: what lets
 * caches that start at the same moment share one origin download. Asked again every time a blob
 * is picked up, so answers may change from one call to the next.
 */
export interface PeerDirectory {
  /** peers that hold the blob verified now */
  holders(digest: BlobDigest): Promise<readonly PeerEndpoint[]> | readonly PeerEndpoint[];
  /** this node's name: it orders the blobs (each node starts with a different one) and breaks ties between claims */
  readonly self?: string;
  /** other peers fetching the blob from its origins now; without it a cache never waits for a peer */
  fetchers?(digest: BlobDigest): Promise<readonly BlobFetcher[]> | readonly BlobFetcher[];
  /** publishes what this cache does with a blob; resolves once its peers can see it (bounded by the directory) */
  announce?(activity: BlobActivity): Promise<void>;
  /** calls `onChange` when what holders/fetchers answer may have changed; returns the unsubscribe */
  watch?(onChange: () => void): () => void;
}

/** Every listed peer is tried for every blob; one that lacks it answers 404 and is skipped for that blob. */
export function staticPeers(peers: readonly PeerEndpoint[]): PeerDirectory {
  return { holders: () => peers };
}

export function peerBlobUrl(peer: PeerEndpoint, d: BlobDigest): string {
  return `${peer.url.replace(/\/+$/, '')}/blobs/${d.alg}/${d.hex}`;
}
