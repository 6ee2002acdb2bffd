import { promises as fs } from 'fs';
import { dirname, join } from 'path';
import { downloadBlobs, type Backoff, type DownloadCounters } from './delivery';
import { DeliveryError, type DeliveryFailureReason } from './errors';
import type { CacheEvent } from './events';
import { planEviction, type EvictionCandidate } from './eviction';
import { publishHfSnapshot, removeHfSnapshot, validateHfLayout, type HfLayoutOptions } from './hf-layout';
import { CacheLayout, exists, fsyncDir, hexOf, removeTree, writeFileAtomic } from './layout';
import { LeaseLedger, type PersistedLease } from './leases';
import { blobKey, InvalidManifestError, validateCacheManifest, type BlobDigest, type CacheManifest, type CacheManifestFile, type DigestAlg } from './manifest';
import type { PeerDirectory } from './peers';
import { DEFAULT_PROGRESS_THROTTLE, ProgressReporter, type DeliveryProgress, type ProgressThrottle } from './progress';
import { createAgents, destroyAgents, type HttpAgents } from './range-fetch';
import { TokenBucket } from './token-bucket';

export interface ModelCacheOptions {
  /** the cache root; trees are under <root>/trees, the HF view under <root>/hf */
  readonly root: string;
  /** parallel ranged requests shared by the files of a manifest (default 8) */
  readonly streams?: number;
  /** bytes per ranged request of a big file (default 16 MiB) */
  readonly chunkSize?: number;
  /** no byte for this long retries the range (default 30 000 ms) */
  readonly stallTimeoutMs?: number;
  /** per source, after a failed request (default 1 min doubling to 1 h) */
  readonly backoff?: Partial<Backoff>;
  /** failed requests in a row without a byte before a chunk fails the delivery (default 10) */
  readonly maxAttemptsWithoutProgress?: number;
  /** digest mismatches of one blob before the delivery fails with DigestMismatch (default 3) */
  readonly maxDigestAttempts?: number;
  /** bytes per second over all streams; unset: no cap */
  readonly bandwidthBytesPerSecond?: number;
  /** fractions of capacity (default 0.8 and 0.7) */
  readonly watermarks?: { readonly high?: number; readonly low?: number };
  /** bytes the cache may use; unset: the size of the cache's filesystem (statfs) */
  readonly capacityBytes?: number;
  readonly progressThrottle?: Partial<ProgressThrottle>;
  readonly peers?: PeerDirectory;
  readonly onEvent?: (e: CacheEvent) => void;
  /** absolute directories whose files a manifest may name as `file:///` sources (LOCAL artifacts on shared storage); default none */
  readonly localRoots?: readonly string[];
}

export interface EnsureOptions {
  /** also lay the tree out as a Hugging Face cache snapshot */
  readonly hf?: HfLayoutOptions;
  /** never evict this tree (until unpin) */
  readonly pin?: boolean;
  readonly onProgress?: (p: DeliveryProgress) => void;
  readonly signal?: AbortSignal;
}

interface Transfer {
  /** bytes fetched from origins / from peers during this delivery */
  readonly originBytes: number;
  readonly peerBytes: number;
  /** bytes of chunks a crashed run left verified-on-disk: re-read, not re-fetched */
  readonly resumedBytes: number;
  /** bytes of blobs that were already in the cache */
  readonly reusedBytes: number;
  /** unique blob bytes of the manifest */
  readonly bytesTotal: number;
}

export type DeliveryResult =
  | ({ readonly state: 'Ready'; readonly digest: string; readonly path: string; readonly hfSnapshotPath?: string } & Transfer)
  | ({ readonly state: 'Failed'; readonly digest: string; readonly reason: DeliveryFailureReason; readonly message: string } & Transfer);

export interface TreeInfo {
  readonly digest: string;
  readonly path: string;
  readonly hfSnapshotPath?: string;
  readonly bytes: number;
  readonly pinned: boolean;
  readonly inUse: number;
  readonly lastUsedAt: number;
}

export interface TreeLease {
  /** persisted in <root>/leases.json until released: a lease outlives the process that took it */
  readonly id: string;
  readonly digest: string;
  /** what acquire() was told holds it ('' if nothing) */
  readonly holder: string;
  readonly path: string;
  readonly hfSnapshotPath?: string;
  /** idempotent; the tree becomes evictable once no lease holds it */
  release(): Promise<void>;
}

export interface CacheUsage {
  readonly capacityBytes: number;
  /** bytes used, counting what reservations still expect to write */
  readonly usedBytes: number;
  readonly reservedBytes: number;
  /** verified blobs, each counted once however many trees link it */
  readonly blobBytes: number;
  readonly highBytes: number;
  readonly lowBytes: number;
}

interface TreeRecord {
  version: 1;
  digest: string;
  files: Array<{ path: string; size: number; alg: DigestAlg; hex: string }>;
  createdAt: number;
  lastUsedAt: number;
  pinned: boolean;
  hf?: HfLayoutOptions;
}

interface Reservation {
  readonly bytes: number;
  /** bytes written to partial files (what statfs already sees) */
  written: number;
  /** bytes of blobs published (what blobSizes already counts) */
  published: number;
}

/** a pseudo tree in the eviction plan for blobs no tree links (a crashed delivery's leftovers) */
const LOOSE_BLOBS = 'loose-blobs';

/**
 * The node cache: content-addressed verified blobs, one read-only tree per manifest, optional
 * Hugging Face layout, watermarks with LRU eviction, pins and leases. One process owns a root.
 */
export class ModelCache {
  readonly layout: CacheLayout;
  private readonly records = new Map<string, TreeRecord>();
  private readonly blobSizes = new Map<string, number>();
  private readonly inUse = new Map<string, number>();
  /** every lease held, persisted; loaded at open, so inUse counts the leases of earlier processes too */
  private leases!: LeaseLedger;
  /** blobs deliveries in flight rely on: never deleted by eviction */
  private readonly keep = new Map<string, number>();
  private readonly reservations = new Set<Reservation>();
  /** blobs being fetched by some delivery: settled when that delivery stops fetching, published or not */
  private readonly blobDownloads = new Map<string, Promise<void>>();
  private readonly inflight = new Map<string, { result: Promise<DeliveryResult>; listeners: Set<(p: DeliveryProgress) => void> }>();
  private capacityLock: Promise<void> = Promise.resolve();
  private readonly agents: HttpAgents = createAgents();
  private readonly bucket?: TokenBucket;
  private readonly high: number;
  private readonly low: number;

  private constructor(private readonly o: ModelCacheOptions) {
    this.layout = new CacheLayout(o.root);
    this.high = o.watermarks?.high ?? 0.8;
    this.low = o.watermarks?.low ?? 0.7;
    if (!(this.low > 0 && this.low <= this.high && this.high <= 1)) {
      throw new RangeError(`watermarks: expected 0 < low <= high <= 1, got low ${this.low}, high ${this.high}`);
    }
    if (o.capacityBytes !== undefined && !(Number.isSafeInteger(o.capacityBytes) && o.capacityBytes > 0)) {
      throw new RangeError(`capacityBytes: expected a positive integer of bytes, got ${o.capacityBytes}`);
    }
    for (const [name, v] of [['streams', o.streams], ['chunkSize', o.chunkSize], ['stallTimeoutMs', o.stallTimeoutMs], ['maxAttemptsWithoutProgress', o.maxAttemptsWithoutProgress], ['maxDigestAttempts', o.maxDigestAttempts]] as const) {
      if (v !== undefined && !(Number.isSafeInteger(v) && v > 0)) throw new RangeError(`${name}: expected a positive integer, got ${v}`);
    }
    if (o.bandwidthBytesPerSecond !== undefined) this.bucket = new TokenBucket(o.bandwidthBytesPerSecond);
  }

  static async open(o: ModelCacheOptions): Promise<ModelCache> {
    const cache = new ModelCache(o);
    await cache.load();
    return cache;
  }

  /** Brings a manifest's tree to Ready: downloads what is missing, verifies it, publishes it. Never rejects for a failed delivery. */
  ensure(manifest: CacheManifest, opts: EnsureOptions = {}): Promise<DeliveryResult> {
    const running = this.inflight.get(manifest.digest);
    if (running) {
      if (opts.onProgress) running.listeners.add(opts.onProgress);
      return running.result.then(async (r) => {
        if (r.state === 'Ready' && opts.pin) await this.pin(manifest.digest);
        return r;
      });
    }
    const listeners = new Set<(p: DeliveryProgress) => void>();
    if (opts.onProgress) listeners.add(opts.onProgress);
    const result = this.deliver(manifest, opts, (p) => listeners.forEach((l) => l(p))).finally(() => this.inflight.delete(manifest.digest));
    this.inflight.set(manifest.digest, { result, listeners });
    return result;
  }

  /**
   * A workload takes the tree; it is not evicted until every lease is released. The lease is on
   * disk when this resolves, so it holds across a restart of the owner until released; `holder`
   * tells the owner's leases apart in heldLeases() after one.
   */
  async acquire(digest: string, opts: { holder?: string } = {}): Promise<TreeLease> {
    const rec = this.records.get(digest);
    if (!rec) throw new DeliveryError('InvalidManifest', `tree ${digest} is not Ready on this node: ensure() it first`);
    const lease = await this.leases.add(digest, opts.holder ?? '');
    this.inUse.set(digest, (this.inUse.get(digest) ?? 0) + 1);
    rec.lastUsedAt = Date.now();
    await this.saveRecord(rec);
    return this.leaseHandle(lease);
  }

  /**
   * Every lease held, those of an earlier process included (persisted, reloaded at open): a
   * restarted owner keeps the ones its workloads still need and releases the rest.
   */
  heldLeases(): TreeLease[] {
    return this.leases.list().map((l) => this.leaseHandle(l));
  }

  private leaseHandle(lease: PersistedLease): TreeLease {
    const rec = this.records.get(lease.digest);
    return {
      id: lease.id,
      digest: lease.digest,
      holder: lease.holder,
      path: this.layout.tree(lease.digest),
      hfSnapshotPath: rec?.hf ? join(this.layout.hfCacheDir, hfFolder(rec.hf), 'snapshots', rec.hf.commit) : undefined,
      release: async () => {
        // idempotent, across every handle of the lease: only the release that removes it counts
        if (!(await this.leases.remove(lease.id))) return;
        const n = (this.inUse.get(lease.digest) ?? 1) - 1;
        if (n > 0) this.inUse.set(lease.digest, n);
        else this.inUse.delete(lease.digest);
        const r = this.records.get(lease.digest);
        if (r) {
          r.lastUsedAt = Date.now();
          await this.saveRecord(r);
        }
      },
    };
  }

  async pin(digest: string): Promise<void> {
    await this.setPinned(digest, true);
  }

  async unpin(digest: string): Promise<void> {
    await this.setPinned(digest, false);
  }

  trees(): TreeInfo[] {
    return [...this.records.values()].map((r) => ({
      digest: r.digest,
      path: this.layout.tree(r.digest),
      hfSnapshotPath: r.hf ? join(this.layout.hfCacheDir, hfFolder(r.hf), 'snapshots', r.hf.commit) : undefined,
      bytes: uniqueBytes(r.files),
      pinned: r.pinned,
      inUse: this.inUse.get(r.digest) ?? 0,
      lastUsedAt: r.lastUsedAt,
    }));
  }

  /** The path of a verified blob, or undefined: what the peer server serves, nothing else. */
  verifiedBlob(d: BlobDigest): { path: string; size: number } | undefined {
    const size = this.blobSizes.get(blobKey(d));
    return size === undefined ? undefined : { path: this.layout.blob(d), size };
  }

  async usage(): Promise<CacheUsage> {
    const capacity = await this.capacity();
    const blobBytes = sum(this.blobSizes.values());
    const reservedBytes = sum([...this.reservations].map((r) => r.bytes - r.published));
    return { capacityBytes: capacity.total, usedBytes: capacity.used, reservedBytes, blobBytes, highBytes: this.high * capacity.total, lowBytes: this.low * capacity.total };
  }

  /** Evicts unused trees down to the low watermark if usage is above the high one; returns the trees evicted. */
  enforceWatermarks(): Promise<string[]> {
    return this.withCapacityLock(async () => {
      const { total, used } = await this.capacity();
      const plan = planEviction(this.evictionInput(used, 0, total));
      await this.applyEviction(plan.evict, plan.deleteBlobs);
      return plan.evict.filter((d) => d !== LOOSE_BLOBS);
    });
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.inflight.values()].map((f) => f.result));
    destroyAgents(this.agents);
  }

  private async deliver(manifest: CacheManifest, opts: EnsureOptions, emit: (p: DeliveryProgress) => void): Promise<DeliveryResult> {
    const counters: DownloadCounters = { originBytes: 0, peerBytes: 0, resumedBytes: 0 };
    let bytesTotal = 0;
    let reusedBytes = 0;
    let progress: ProgressReporter | undefined;
    const kept: string[] = [];
    let reservation: Reservation | undefined;
    try {
      validateCacheManifest(manifest, { localRoots: this.o.localRoots });
      if (opts.hf) validateHfLayout(opts.hf);
      const unique = uniqueFiles(manifest.files);
      bytesTotal = sum(unique.map((f) => f.size));
      for (const f of unique) {
        const k = blobKey(f.digest);
        this.keep.set(k, (this.keep.get(k) ?? 0) + 1);
        kept.push(k);
      }
      progress = new ProgressReporter(manifest.digest, bytesTotal, emit, { ...DEFAULT_PROGRESS_THROTTLE, ...this.o.progressThrottle });
      const existing = this.records.get(manifest.digest);
      if (existing && (await exists(this.layout.tree(manifest.digest)))) {
        reusedBytes = bytesTotal;
        existing.lastUsedAt = Date.now();
        if (opts.pin) existing.pinned = true;
        let hfSnapshotPath: string | undefined;
        if (opts.hf) {
          existing.hf = opts.hf;
          hfSnapshotPath = await publishHfSnapshot(this.layout, opts.hf, unique);
        }
        await this.saveRecord(existing);
        progress.ready();
        return { state: 'Ready', digest: manifest.digest, path: this.layout.tree(manifest.digest), hfSnapshotPath, ...counters, reusedBytes, bytesTotal };
      }

      const missing = unique.filter((f) => !this.blobSizes.has(blobKey(f.digest)));
      const missingBytes = sum(missing.map((f) => f.size));
      reusedBytes = bytesTotal - missingBytes;
      reservation = await this.reserve(manifest.digest, missingBytes);
      progress.add(reusedBytes);
      progress.start();
      const r = reservation;
      // a blob another delivery is fetching is waited for, not fetched twice into the same partial file
      for (let pass = 0; ; pass++) {
        const todo = missing.filter((f) => !this.blobSizes.has(blobKey(f.digest)));
        const theirs = todo.filter((f) => this.blobDownloads.has(blobKey(f.digest)));
        const ours = todo.filter((f) => !this.blobDownloads.has(blobKey(f.digest)));
        if (todo.length === 0) break;
        if (pass > 1 && ours.length === 0 && theirs.length > 0) {
          throw new DeliveryError('SourceUnavailable', `${theirs[0].path}: the delivery that was fetching it failed twice`);
        }
        const settle = new Map<string, () => void>();
        for (const f of ours) {
          const k = blobKey(f.digest);
          this.blobDownloads.set(k, new Promise<void>((resolve) => settle.set(k, resolve)));
        }
        try {
          await Promise.all([
            this.fetchBlobs(ours, counters, r, progress, opts.signal),
            ...theirs.map(async (f) => {
              await this.blobDownloads.get(blobKey(f.digest));
              if (this.blobSizes.has(blobKey(f.digest))) progress?.add(f.size);
            }),
          ]);
        } finally {
          for (const [k, resolve] of settle) {
            this.blobDownloads.delete(k);
            resolve();
          }
        }
      }
      const path = await this.publishTree(manifest);
      const now = Date.now();
      const rec: TreeRecord = {
        version: 1,
        digest: manifest.digest,
        files: manifest.files.map((f) => ({ path: f.path, size: f.size, alg: f.digest.alg, hex: f.digest.hex })),
        createdAt: now,
        lastUsedAt: now,
        pinned: opts.pin ?? false,
        hf: opts.hf,
      };
      const hfSnapshotPath = opts.hf ? await publishHfSnapshot(this.layout, opts.hf, unique) : undefined;
      await this.saveRecord(rec);
      this.records.set(rec.digest, rec);
      progress.ready();
      return { state: 'Ready', digest: manifest.digest, path, hfSnapshotPath, ...counters, reusedBytes, bytesTotal };
    } catch (err) {
      const e =
        err instanceof DeliveryError
          ? err
          : err instanceof InvalidManifestError
            ? new DeliveryError('InvalidManifest', err.message)
            : new DeliveryError('CacheIOError', (err as Error).message ?? String(err));
      const message = e.message.slice(e.reason.length + 2);
      if (progress) progress.failed(e.reason, message);
      else emit({ digest: manifest.digest, state: 'Failed', bytesDone: 0, bytesTotal, percent: 0, reason: e.reason, message });
      return { state: 'Failed', digest: manifest.digest, reason: e.reason, message, ...counters, reusedBytes, bytesTotal };
    } finally {
      if (reservation) this.reservations.delete(reservation);
      for (const k of kept) {
        const n = (this.keep.get(k) ?? 1) - 1;
        if (n > 0) this.keep.set(k, n);
        else this.keep.delete(k);
      }
      if (reservation) await this.enforceWatermarks().catch(() => undefined);
    }
  }

  private fetchBlobs(files: readonly CacheManifestFile[], counters: DownloadCounters, r: Reservation, progress: ProgressReporter | undefined, signal?: AbortSignal): Promise<void> {
    if (files.length === 0) return Promise.resolve();
    return downloadBlobs(
      files,
      this.layout,
      {
        streams: this.o.streams ?? 8,
        chunkSize: this.o.chunkSize ?? 16 * 1024 * 1024,
        stallTimeoutMs: this.o.stallTimeoutMs ?? 30_000,
        backoff: { initialMs: this.o.backoff?.initialMs ?? 60_000, maxMs: this.o.backoff?.maxMs ?? 3_600_000 },
        maxAttemptsWithoutProgress: this.o.maxAttemptsWithoutProgress ?? 10,
        maxDigestAttempts: this.o.maxDigestAttempts ?? 3,
        bucket: this.bucket,
        agents: this.agents,
        peers: this.o.peers,
        onEvent: this.o.onEvent,
      },
      counters,
      (n) => {
        r.written = Math.max(0, r.written + n);
        progress?.add(n);
      },
      (file) => {
        this.blobSizes.set(blobKey(file.digest), file.size);
        r.published += file.size;
      },
      signal,
    );
  }

  /** Reserves space before a byte is fetched; evicts unused trees when it must; InsufficientCapacity otherwise. */
  private reserve(digest: string, bytes: number): Promise<Reservation> {
    return this.withCapacityLock(async () => {
      const { total, used } = await this.capacity();
      const plan = planEviction(this.evictionInput(used, bytes, total));
      if (!plan.fits) {
        throw new DeliveryError(
          'InsufficientCapacity',
          `${digest} needs ${bytes} bytes; ${used} of ${total} are used and the high watermark is ${Math.floor(this.high * total)}; evicting every unpinned tree no workload uses would free only ${plan.freedBytes}`,
        );
      }
      await this.applyEviction(plan.evict, plan.deleteBlobs);
      const r: Reservation = { bytes, written: 0, published: 0 };
      this.reservations.add(r);
      return r;
    });
  }

  private evictionInput(used: number, need: number, total: number) {
    const linked = new Set<string>();
    const trees: EvictionCandidate[] = [...this.records.values()].map((r) => {
      const blobs = r.files.map((f) => `${f.alg}:${f.hex}`);
      blobs.forEach((b) => linked.add(b));
      return { digest: r.digest, lastUsedAt: r.lastUsedAt, pinned: r.pinned, inUse: this.inUse.get(r.digest) ?? 0, blobs };
    });
    const loose = [...this.blobSizes.keys()].filter((b) => !linked.has(b));
    if (loose.length > 0) trees.push({ digest: LOOSE_BLOBS, lastUsedAt: -Infinity, pinned: false, inUse: 0, blobs: loose });
    return { trees, blobSizes: this.blobSizes, keep: new Set(this.keep.keys()), usedBytes: used, needBytes: need, capacityBytes: total, high: this.high, low: this.low };
  }

  private async applyEviction(digests: readonly string[], blobs: readonly string[]): Promise<void> {
    for (const d of digests) {
      if (d === LOOSE_BLOBS) continue;
      const rec = this.records.get(d);
      if (!rec) continue;
      // the record goes first: a crash after it leaves a tree without a record, which open() removes
      this.records.delete(d);
      await fs.rm(this.layout.record(d), { force: true });
      await removeTree(this.layout.tree(d));
      if (rec.hf) {
        const hf = rec.hf;
        const others = [...this.records.values()].filter((o) => o.hf && hfFolder(o.hf) === hfFolder(hf));
        const wanted = others.flatMap((o) => o.files.map((f) => ({ commit: o.hf?.commit ?? '', file: { path: f.path, digest: { alg: f.alg, hex: f.hex } } })));
        await removeHfSnapshot(this.layout, hf, rec.files.map((f) => ({ path: f.path, digest: { alg: f.alg, hex: f.hex } })), wanted);
      }
      this.o.onEvent?.({ type: 'TreeEvicted', digest: d, freedBytes: 0 });
    }
    for (const b of blobs) {
      const [alg, hex] = b.split(':') as [DigestAlg, string];
      await fs.rm(this.layout.blob({ alg, hex }), { force: true });
      this.blobSizes.delete(b);
    }
  }

  private async capacity(): Promise<{ total: number; used: number }> {
    if (this.o.capacityBytes !== undefined) {
      const pending = sum([...this.reservations].map((r) => Math.max(0, r.bytes - r.published)));
      return { total: this.o.capacityBytes, used: sum(this.blobSizes.values()) + pending };
    }
    const st = await fs.statfs(this.o.root);
    const total = st.blocks * st.bsize;
    const pending = sum([...this.reservations].map((r) => Math.max(0, r.bytes - r.written)));
    return { total, used: (st.blocks - st.bavail) * st.bsize + pending };
  }

  private withCapacityLock<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.capacityLock.then(fn);
    this.capacityLock = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /** Links the verified blobs into a staging directory and renames it into place: the tree appears whole or not at all. */
  private async publishTree(manifest: CacheManifest): Promise<string> {
    const target = this.layout.tree(manifest.digest);
    await removeTree(target); // a tree without a record is a leftover of a crash
    const staging = this.layout.tmpName(`tree-${hexOf(manifest.digest).slice(0, 12)}`);
    await fs.mkdir(staging, { recursive: true });
    const dirs = new Set<string>();
    for (const f of manifest.files) {
      const at = join(staging, f.path);
      await fs.mkdir(dirname(at), { recursive: true });
      for (let d = dirname(at); d !== staging; d = dirname(d)) dirs.add(d);
      await fs.link(this.layout.blob(f.digest), at);
    }
    // deepest first, so a parent is sealed after its children were
    for (const d of [...dirs].sort((a, b) => b.length - a.length)) await fs.chmod(d, 0o555);
    await fs.rename(staging, target);
    await fs.chmod(target, 0o555);
    await fsyncDir(this.layout.treesDir);
    return target;
  }

  private async setPinned(digest: string, pinned: boolean): Promise<void> {
    const rec = this.records.get(digest);
    if (!rec) throw new DeliveryError('InvalidManifest', `tree ${digest} is not Ready on this node: ensure() it first`);
    rec.pinned = pinned;
    await this.saveRecord(rec);
  }

  private async saveRecord(rec: TreeRecord): Promise<void> {
    await writeFileAtomic(this.layout.record(rec.digest), JSON.stringify(rec));
  }

  private async load(): Promise<void> {
    await this.layout.create();
    for (const e of await fs.readdir(this.layout.tmpDir)) await removeTree(join(this.layout.tmpDir, e));
    for (const alg of ['sha256', 'gitsha1'] as const) {
      for (const hex of await fs.readdir(join(this.layout.blobsDir, alg))) {
        const st = await fs.stat(join(this.layout.blobsDir, alg, hex));
        this.blobSizes.set(`${alg}:${hex}`, st.size);
      }
    }
    for (const name of await fs.readdir(this.layout.stateDir)) {
      const p = join(this.layout.stateDir, name);
      if (!name.endsWith('.json')) {
        await fs.rm(p, { force: true }); // a torn atomic write
        continue;
      }
      let rec: TreeRecord;
      try {
        rec = JSON.parse(await fs.readFile(p, 'utf8')) as TreeRecord;
        if (rec.version !== 1 || typeof rec.digest !== 'string' || !Array.isArray(rec.files)) throw new Error('not a tree record');
      } catch {
        // unreadable: the tree is rebuilt by the next ensure() of its manifest, from the blobs still here
        await fs.rm(p, { force: true });
        continue;
      }
      const complete = (await exists(this.layout.tree(rec.digest))) && rec.files.every((f) => this.blobSizes.has(`${f.alg}:${f.hex}`));
      if (complete) this.records.set(rec.digest, rec);
      else await fs.rm(p, { force: true });
    }
    for (const name of await fs.readdir(this.layout.treesDir)) {
      if (![...this.records.keys()].some((d) => hexOf(d) === name)) await removeTree(join(this.layout.treesDir, name));
    }
    // Leases of an earlier process hold their trees from the start: nothing is evicted before the
    // owner has decided which of them its workloads still need. A lease on a tree that is gone is dropped.
    this.leases = (await LeaseLedger.open(this.o.root, (d) => this.records.has(d))).ledger;
    for (const l of this.leases.list()) this.inUse.set(l.digest, (this.inUse.get(l.digest) ?? 0) + 1);
  }
}

function hfFolder(o: HfLayoutOptions): string {
  return [`${o.type ?? 'model'}s`, ...o.repo.split('/')].join('--');
}

function uniqueFiles(files: readonly CacheManifestFile[]): CacheManifestFile[] {
  const seen = new Map<string, CacheManifestFile>();
  for (const f of files) if (!seen.has(blobKey(f.digest))) seen.set(blobKey(f.digest), f);
  return [...seen.values()];
}

function uniqueBytes(files: ReadonlyArray<{ size: number; alg: string; hex: string }>): number {
  const m = new Map<string, number>();
  for (const f of files) m.set(`${f.alg}:${f.hex}`, f.size);
  return sum(m.values());
}

function sum(xs: Iterable<number>): number {
  let n = 0;
  for (const x of xs) n += x;
  return n;
}
