import type { ArtifactFile, ArtifactFileFetch, ArtifactNodeStatus } from '@gpufleet/contracts';
import type { KvMirror } from '@gpufleet/messaging';
import { blobKey, type BlobActivity, type BlobDigest, type BlobFetcher, type PeerDirectory, type PeerEndpoint } from '@gpufleet/model-cache';

/** How long an announcement waits for the node's own mirror to show it (then the cache goes on regardless). */
const VISIBLE_WITHIN_MS = 2_000;

/** A copy this node delivers now: its record key, its manifest, and each blob's first index in the manifest's files. */
interface TrackedCopy {
  readonly manifestDigest: string;
  readonly index: ReadonlyMap<string, number>;
  /** one write in flight per record, and at most one more queued: announcements coalesce */
  write?: Promise<number | undefined>;
  queued?: Promise<number | undefined>;
}

/** Each blob's first index in the manifest's files (a blob under several paths is named by its first). */
export function blobIndex(files: readonly Pick<ArtifactFile, 'digest'>[]): Map<string, number> {
  const index = new Map<string, number>();
  files.forEach((f, i) => {
    if (!index.has(f.digest)) index.set(f.digest, i);
  });
  return index;
}

/** Peers (other nodes' copies of one of `manifests`) that hold the blob verified: a Ready copy, or a Downloading one that lists it. */
export function holdersOf(copies: Iterable<ArtifactNodeStatus>, self: string, manifests: ReadonlyMap<string, ReadonlyMap<string, number>>, blob: string): string[] {
  const urls = new Set<string>();
  for (const c of copies) {
    const index = manifests.get(c.manifestDigest)?.get(blob);
    if (c.node === self || index === undefined || !c.peerUrl) continue;
    if (c.state === 'Ready' || (c.state === 'Downloading' && c.verifiedFiles.includes(index))) urls.add(c.peerUrl);
  }
  return [...urls];
}

/** Other nodes whose Downloading copy of one of `manifests` says they fetch the blob from the origin. */
export function fetchersOf(copies: Iterable<ArtifactNodeStatus>, self: string, manifests: ReadonlyMap<string, ReadonlyMap<string, number>>, blob: string): BlobFetcher[] {
  const byPeer = new Map<string, BlobFetcher>();
  for (const c of copies) {
    const index = manifests.get(c.manifestDigest)?.get(blob);
    if (c.node === self || index === undefined || c.state !== 'Downloading') continue;
    const f = c.fetchingFiles.find((x) => x.file === index);
    if (!f) continue;
    const fetcher = { peer: c.node, claimedAt: f.claimedAt?.getTime() ?? 0, bytesDone: f.bytesDone };
    const known = byPeer.get(c.node);
    if (!known || fetcher.claimedAt < known.claimedAt) byPeer.set(c.node, fetcher);
  }
  return [...byPeer.values()];
}

/**
 * One node's part in peer sync, kept in its artifact-nodes records: which blobs of a copy being
 * delivered it holds verified (`verified_files`) and which it fetches from the origin now
 * (`fetching_files`), written at once when that changes (coalesced per record, one write in
 * flight), and the PeerDirectory its cache asks, read from every node's records.
 */
export class CopySwarm {
  /** blob key → this node's fetch from the origin, as its cache announced it */
  private readonly fetching = new Map<string, { claimedAt: number; bytesDone: number }>();
  /** record key → a copy in delivery */
  private readonly copies = new Map<string, TrackedCopy>();

  constructor(
    private readonly node: string,
    private readonly records: KvMirror<ArtifactNodeStatus>,
    private readonly token: string,
    /** whether this node's cache holds the blob verified */
    private readonly verified: (d: BlobDigest) => boolean,
  ) {}

  /** A delivery of `manifestDigest` starts under record `key`: its records carry the blob fields from now on. */
  track(key: string, manifestDigest: string, files: readonly Pick<ArtifactFile, 'digest'>[]): void {
    this.copies.set(key, { manifestDigest, index: blobIndex(files) });
  }

  untrack(key: string): void {
    this.copies.delete(key);
  }

  /** The blob fields of record `key` as they are now (empty for a copy not in delivery). */
  blobFields(key: string): Pick<ArtifactNodeStatus, 'verifiedFiles' | 'fetchingFiles'> {
    const copy = this.copies.get(key);
    if (!copy) return { verifiedFiles: [], fetchingFiles: [] };
    const verifiedFiles: number[] = [];
    const fetchingFiles: ArtifactFileFetch[] = [];
    for (const [blob, file] of copy.index) {
      const [alg, hex] = blob.split(':') as [BlobDigest['alg'], string];
      if (this.verified({ alg, hex })) verifiedFiles.push(file);
      const f = this.fetching.get(blob);
      if (f) fetchingFiles.push({ file, claimedAt: new Date(f.claimedAt), bytesDone: f.bytesDone });
    }
    return { verifiedFiles: verifiedFiles.sort((a, b) => a - b), fetchingFiles: fetchingFiles.sort((a, b) => a.file - b.file) };
  }

  directory(): PeerDirectory {
    const manifests = (): Map<string, ReadonlyMap<string, number>> => new Map([...this.copies.values()].map((c) => [c.manifestDigest, c.index]));
    const values = (): ArtifactNodeStatus[] => [...this.records.entries.values()].map((e) => e.value);
    return {
      self: this.node,
      holders: (d: BlobDigest): PeerEndpoint[] => holdersOf(values(), this.node, manifests(), blobKey(d)).map((url) => ({ url, token: this.token })),
      fetchers: (d: BlobDigest): BlobFetcher[] => fetchersOf(values(), this.node, manifests(), blobKey(d)),
      announce: (a: BlobActivity) => this.announce(a),
      watch: (onChange: () => void) => this.records.listen(() => onChange()),
    };
  }

  /** Records the activity and writes every record of a copy with that blob; resolves once this node's mirror shows the writes (bounded). */
  private async announce(a: BlobActivity): Promise<void> {
    const blob = blobKey(a.digest);
    if (a.state === 'Fetching') this.fetching.set(blob, { claimedAt: a.claimedAt, bytesDone: a.bytesDone });
    else this.fetching.delete(blob);
    const writes = [...this.copies].filter(([, c]) => c.index.has(blob)).map(async ([key, c]) => {
      const revision = await this.write(key, c);
      if (revision !== undefined) await this.visible(key, revision);
    });
    await Promise.all(writes);
  }

  /** One write of the record's blob fields in flight; a request meanwhile queues one more, which reads the fields when it runs. */
  private write(key: string, c: TrackedCopy): Promise<number | undefined> {
    const once = (): Promise<number | undefined> =>
      this.records.store
        .modify(key, (cur) =>
          // only a copy still downloading carries blob fields: never revive a record that went Ready, Failed or away
          cur && cur.value.state === 'Downloading' && cur.value.manifestDigest === c.manifestDigest && this.copies.get(key) === c
            ? { ...cur.value, ...this.blobFields(key), updatedAt: new Date() }
            : undefined,
        )
        .then((v) => v?.revision);
    if (!c.write) {
      c.write = once().finally(() => (c.write = undefined));
      return c.write;
    }
    c.queued ??= c.write
      .catch(() => undefined)
      .then(() => {
        c.queued = undefined;
        return this.write(key, c);
      });
    return c.queued;
  }

  /** Resolves once this node's mirror holds record `key` at `revision` or later, or after VISIBLE_WITHIN_MS. */
  private visible(key: string, revision: number): Promise<void> {
    if ((this.records.get(key)?.revision ?? 0) >= revision) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        off();
        resolve();
      };
      const timer = setTimeout(done, VISIBLE_WITHIN_MS);
      const off = this.records.listen((k, change) => {
        if (k === key && change.revision >= revision) done();
      });
    });
  }
}
