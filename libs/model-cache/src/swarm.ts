import { createHash } from 'crypto';
import { blobKey, type BlobDigest } from './manifest';
import type { BlobActivity, BlobFetcher, PeerDirectory, PeerEndpoint } from './peers';

/** Blobs smaller than this are never claimed or waited for: waiting costs more than fetching them twice. */
export const SWARM_MIN_BLOB_BYTES = 1024 * 1024;

/** The claim that keeps a blob when two nodes claimed it: the earlier one, then the lower node name. Every node orders two claims the same way. */
export function claimPrecedes(a: Pick<BlobFetcher, 'peer' | 'claimedAt'>, b: Pick<BlobFetcher, 'peer' | 'claimedAt'>): boolean {
  return a.claimedAt !== b.claimedAt ? a.claimedAt < b.claimedAt : a.peer < b.peer;
}

/**
 * Which peers' claims are alive: a claim is alive while its bytes moved within `stallMs`. A claim
 * first seen counts as having moved then, so a claimer that died costs a waiter at most one
 * `stallMs` from the moment the waiter saw it.
 */
export class ClaimWatch {
  private readonly seen = new Map<string, { claimedAt: number; bytesDone: number; since: number }>();

  constructor(
    private readonly stallMs: number,
    private readonly now: () => number = () => Date.now(),
  ) {}

  /** The fetchers of blob `key` whose fetch is alive, from the directory's latest answer. */
  live(key: string, fetchers: readonly BlobFetcher[]): BlobFetcher[] {
    const t = this.now();
    return fetchers.filter((f) => {
      const id = `${key}\0${f.peer}`;
      const last = this.seen.get(id);
      if (!last || last.claimedAt !== f.claimedAt || last.bytesDone !== f.bytesDone) {
        // bounded by the blobs of a delivery times the peers fetching them
        this.seen.set(id, { claimedAt: f.claimedAt, bytesDone: f.bytesDone, since: t });
        return true;
      }
      return t - last.since < this.stallMs;
    });
  }
}

/** Where a node starts in a list of `n` blobs: nodes that start together begin with different blobs. */
export function rotationOf(self: string | undefined, n: number): number {
  if (!self || n <= 1) return 0;
  return createHash('sha256').update(self).digest().readUInt32BE(0) % n;
}

export function rotate<T>(xs: readonly T[], by: number): T[] {
  return xs.length === 0 ? [] : [...xs.slice(by % xs.length), ...xs.slice(0, by % xs.length)];
}

/**
 * A directory for node caches in one process (benchmarks, tests, an embedded fleet): each
 * member's announcements are seen by the others at once. The node role of model delivery keeps
 * the same facts in its artifact-nodes records instead, so caches on other machines see them.
 */
export class LocalSwarm {
  private readonly members = new Map<string, { endpoint: PeerEndpoint; verified: Set<string>; fetching: Map<string, { claimedAt: number; bytesDone: number }> }>();
  private readonly listeners = new Set<() => void>();

  /** The directory of the member `name`, whose peer server is `endpoint`. */
  join(name: string, endpoint: PeerEndpoint): PeerDirectory {
    if (this.members.has(name)) throw new RangeError(`name: ${name} already joined this swarm`);
    const me = { endpoint, verified: new Set<string>(), fetching: new Map<string, { claimedAt: number; bytesDone: number }>() };
    this.members.set(name, me);
    const others = () => [...this.members].filter(([n]) => n !== name);
    return {
      self: name,
      holders: (d: BlobDigest) => others().filter(([, m]) => m.verified.has(blobKey(d))).map(([, m]) => m.endpoint),
      fetchers: (d: BlobDigest) =>
        others().flatMap(([peer, m]) => {
          const f = m.fetching.get(blobKey(d));
          return f ? [{ peer, ...f }] : [];
        }),
      announce: async (a: BlobActivity) => {
        const key = blobKey(a.digest);
        if (a.state === 'Fetching') me.fetching.set(key, { claimedAt: a.claimedAt, bytesDone: a.bytesDone });
        else me.fetching.delete(key);
        if (a.state === 'Verified') me.verified.add(key);
        for (const l of [...this.listeners]) l();
      },
      watch: (onChange: () => void) => {
        this.listeners.add(onChange);
        return () => this.listeners.delete(onChange);
      },
    };
  }
}
