import { promises as fs } from 'fs';
import { dirname } from 'path';
import { releaseAligned, takeAligned } from './aligned-buffers';
import { DeliveryError, SourceError } from './errors';
import type { CacheEvent } from './events';
import { CacheLayout, fsyncDir } from './layout';
import { blobKey, type CacheManifestFile } from './manifest';
import { type Chunk, chunksOf, HoldBudget, PartialBlob } from './partial-blob';
import { peerBlobUrl, type BlobActivity, type BlobFetcher, type PeerDirectory, type PeerEndpoint } from './peers';
import { fetchRange, redact, type HttpAgents } from './range-fetch';
import { ClaimWatch, claimPrecedes, rotate, rotationOf, SWARM_MIN_BLOB_BYTES } from './swarm';
import { sleep, type TokenBucket } from './token-bucket';

export interface Backoff {
  /** ms before a failed source is tried again the first time (default 60 000) */
  readonly initialMs: number;
  /** doubling stops here (default 3 600 000) */
  readonly maxMs: number;
}

export interface DownloadSettings {
  readonly streams: number;
  readonly chunkSize: number;
  readonly stallTimeoutMs: number;
  readonly backoff: Backoff;
  /** failed requests in a row, with no byte received, after which a chunk gives up */
  readonly maxAttemptsWithoutProgress: number;
  /** whole-file digest mismatches after which a blob gives up */
  readonly maxDigestAttempts: number;
  readonly bucket?: TokenBucket;
  readonly agents: HttpAgents;
  readonly peers?: PeerDirectory;
  readonly onEvent?: (e: CacheEvent) => void;
}

export interface DownloadCounters {
  originBytes: number;
  peerBytes: number;
  /** bytes of completed chunks found in checkpoints: re-read for the hash, not re-fetched */
  resumedBytes: number;
}

interface SourceState {
  readonly id: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly peer: boolean;
  failures: number;
  blockedUntil: number;
}

interface BlobJob {
  readonly file: CacheManifestFile;
  readonly key: string;
  /** peers (added as the directory names them), then the manifest's origins */
  readonly sources: SourceState[];
  chunks: Chunk[];
  remaining: number;
  partial?: Promise<PartialBlob>;
  /** chunks a checkpoint of an earlier run holds */
  resumeDone: Set<number>;
  contributors: Set<string>;
  suspects: Set<string>;
  digestAttempts: number;
  /**
   * pending: not started, or waiting for a peer that fetches it; deciding: looking at the
   * directory; active: its chunks are queued; yielding: it gave way to an earlier claim and
   * waits for its running chunks to stop; done: published
   */
  phase: 'pending' | 'deciding' | 'active' | 'yielding' | 'done';
  /** a pending job is not looked at again before this (ms since the epoch) */
  notBefore: number;
  /** tasks of this job running now */
  running: number;
  /** aborted when the job gives way to an earlier claim: its running chunks stop, keeping what they wrote */
  abort: AbortController;
  /** set while this node announces that it fetches the blob from its origins */
  claim?: Claim;
}

interface Claim {
  readonly claimedAt: number;
  /** the directory showed it, and no earlier claim was seen then */
  confirmed: boolean;
  announcedBytes: number;
  announcedAt: number;
  checking: boolean;
}

interface Task {
  readonly job: BlobJob;
  readonly chunk: Chunk;
}

/** a job's running chunks stop with this when it gives way to an earlier claim */
class GaveWay extends Error {}

export function backoffMs(failures: number, b: Backoff, random = Math.random): number {
  const base = Math.min(b.maxMs, b.initialMs * 2 ** Math.max(0, failures - 1));
  // up to 20 % jitter so that a fleet does not retry the origin in lockstep
  return Math.min(b.maxMs, Math.round(base * (1 + random() * 0.2)));
}

/**
 * Downloads blobs into `blobs/`: all chunks of the started blobs share `streams` workers, and a
 * blob is renamed into place only after its whole-file hash matched.
 *
 * Each blob is started only when a worker is free for it, and the directory is asked then (not
 * once per delivery): peers that hold it verified are used first, several at once; if none does
 * but another node is fetching it from the origin and its bytes move, the blob waits (other
 * blobs go first) until that node verified it, or stalled for `stallTimeoutMs`; otherwise this
 * node claims it (announced to the directory) and fetches it from the origin. Two nodes that
 * claimed the same blob at the same moment find out from the directory: the later claim gives
 * way, keeping the bytes it wrote. `onBytes` sees every byte written to disk (negative when a
 * corrupt file is thrown away); `onPublished` each blob once it is visible.
 */
export async function downloadBlobs(
  files: readonly CacheManifestFile[],
  layout: CacheLayout,
  s: DownloadSettings,
  counters: DownloadCounters,
  onBytes: (n: number) => void,
  onPublished: (file: CacheManifestFile) => void,
  signal?: AbortSignal,
): Promise<void> {
  const stop = new AbortController();
  const onOuterAbort = (): void => stop.abort(signal?.reason);
  signal?.addEventListener('abort', onOuterAbort, { once: true });
  const jobs: BlobJob[] = [];
  const queue: Task[] = [];
  let active = 0;
  let deciding = 0;
  let failure: unknown;
  let wake: Array<() => void> = [];
  const notify = (): void => {
    const w = wake;
    wake = [];
    for (const r of w) r();
  };
  const dir = s.peers;
  const swarm = dir?.fetchers && dir.announce ? dir : undefined;
  const self = dir?.self ?? '';
  const claims = new ClaimWatch(s.stallTimeoutMs);
  // memory for bytes that streams sharing a blob write ahead of its hash (see PartialBlob.write)
  const hold = new HoldBudget(HOLD_BYTES);
  // how often waiting blobs look at the directory again (sooner when it says it changed)
  const pollMs = Math.min(1_000, Math.max(20, Math.floor(s.stallTimeoutMs / 10)));
  // a claim's bytes are published this often while they move: well inside a waiter's stall timeout
  const heartbeatMs = Math.max(20, Math.floor(s.stallTimeoutMs / 3));
  // the last time another node's live claim was seen on a blob of this delivery
  let othersFetchingAt = -Infinity;
  const announce = (a: BlobActivity): Promise<void> => (swarm?.announce ? swarm.announce(a).catch(() => undefined) : Promise.resolve());
  const fetchersOf = async (job: BlobJob): Promise<readonly BlobFetcher[]> =>
    swarm?.fetchers ? Promise.resolve(swarm.fetchers(job.file.digest)).catch(() => []) : [];
  let ticker: NodeJS.Timeout | undefined;
  let unwatch: (() => void) | undefined;

  /** Whether the job may start now; false: look again after pollMs. */
  const decide = async (job: BlobJob): Promise<boolean> => {
    if (job.remaining === 0) return true;
    await refreshPeers(job, s);
    const now = Date.now();
    if (job.sources.some((x) => x.peer && x.blockedUntil <= now && !job.suspects.has(x.id))) return true;
    if (!swarm || job.file.size < SWARM_MIN_BLOB_BYTES) return true;
    if (claims.live(job.key, await fetchersOf(job)).length > 0) {
      othersFetchingAt = Date.now();
      return false;
    }
    // while other nodes fetch too, one claim at a time, so that origin downloads spread over the nodes
    const mine = jobs.filter((j) => j !== job && j.claim);
    if (mine.some((j) => !j.claim?.confirmed)) return false;
    if (mine.length > 0 && Date.now() - othersFetchingAt < s.stallTimeoutMs) return false;
    const claim: Claim = { claimedAt: Date.now(), confirmed: false, announcedBytes: bytesOf(job), announcedAt: Date.now(), checking: false };
    job.claim = claim;
    await announce({ state: 'Fetching', digest: job.file.digest, claimedAt: claim.claimedAt, bytesDone: claim.announcedBytes });
    const rival = claims.live(job.key, await fetchersOf(job)).find((f) => claimPrecedes(f, { peer: self, claimedAt: claim.claimedAt }));
    if (rival) {
      othersFetchingAt = Date.now();
      job.claim = undefined;
      void announce({ state: 'Idle', digest: job.file.digest });
      return false;
    }
    claim.confirmed = true;
    return true;
  };

  const activate = (job: BlobJob): void => {
    job.phase = 'active';
    job.abort = new AbortController();
    if (job.remaining === 0) queue.push({ job, chunk: job.chunks[0] ?? { index: 0, start: 0, end: 0, written: 0, done: true } });
    // a chunk written in full is only waiting for its commit: it is not fetched again
    for (const c of job.chunks) if (!c.done && c.written < c.end - c.start) queue.push({ job, chunk: c });
    notify();
  };

  /** Starts the first pending blob that may start now; its first task, or undefined. */
  const startNext = async (): Promise<Task | undefined> => {
    for (const job of order) {
      if (job.phase !== 'pending' || job.notBefore > Date.now()) continue;
      job.phase = 'deciding';
      deciding++;
      let go: boolean;
      try {
        go = await decide(job);
      } finally {
        deciding--;
      }
      if (failure !== undefined || stop.signal.aborted) {
        job.phase = 'pending';
        return undefined;
      }
      if (!go) {
        job.phase = 'pending';
        job.notBefore = Date.now() + pollMs;
        continue;
      }
      activate(job);
      return takeOf(job);
    }
    return undefined;
  };

  /** The first queued chunk of `job`. */
  const takeOf = (job: BlobJob): Task | undefined => {
    const i = queue.findIndex((t) => t.job === job);
    return i < 0 ? undefined : queue.splice(i, 1)[0];
  };

  /**
   * A chunk of a blob no stream works on, else of a blob started now, else of the blob with the
   * fewest streams (the earliest queued among equals). Blobs move side by side, one stream each
   * while there are blobs enough, because a stream alone on its blob delivers bytes in the order
   * the blob's hash takes them, hashed as they arrive; streams sharing a blob write ahead of its
   * hash, and those bytes must be read back from the file to be hashed (one more copy each, on
   * the event loop's time).
   */
  const nextTask = async (): Promise<Task | undefined> => {
    const idle = queue.find((t) => t.job.running === 0);
    if (idle) return takeOf(idle.job);
    const started = await startNext();
    if (started || queue.length === 0) return started;
    const least = queue.reduce((best, t) => (t.job.running < best.job.running ? t : best));
    return takeOf(least.job);
  };

  /** The blob goes back to pending: an earlier claim of another node keeps it. */
  const giveWay = (job: BlobJob): void => {
    job.claim = undefined;
    job.phase = job.running > 0 ? 'yielding' : 'pending';
    job.notBefore = Date.now() + pollMs;
    for (let i = queue.length - 1; i >= 0; i--) if (queue[i].job === job) queue.splice(i, 1);
    job.abort.abort(new GaveWay());
    void announce({ state: 'Idle', digest: job.file.digest });
  };

  /** Publishes the bytes of this node's claims while they move, and gives way to an earlier claim found late. */
  const tick = (): void => {
    const now = Date.now();
    for (const job of jobs) {
      const c = job.claim;
      if (!c || !c.confirmed || job.phase !== 'active' || job.remaining === 0) continue;
      const bytes = bytesOf(job);
      if (bytes !== c.announcedBytes && now - c.announcedAt >= heartbeatMs) {
        c.announcedBytes = bytes;
        c.announcedAt = now;
        void announce({ state: 'Fetching', digest: job.file.digest, claimedAt: c.claimedAt, bytesDone: bytes });
      }
      if (c.checking) continue;
      c.checking = true;
      void fetchersOf(job)
        .then((fetchers) => {
          const rival = claims.live(job.key, fetchers).find((f) => claimPrecedes(f, { peer: self, claimedAt: c.claimedAt }));
          if (rival && job.claim === c && job.phase === 'active' && job.remaining > 0) giveWay(job);
        })
        .finally(() => (c.checking = false));
    }
    notify();
  };

  let order: BlobJob[] = [];
  try {
    for (const file of files) {
      const job = await prepareJob(file, layout, s);
      jobs.push(job);
      if (job.resumeDone.size > 0) {
        const bytes = job.chunks.filter((c) => c.done).reduce((n, c) => n + c.end - c.start, 0);
        counters.resumedBytes += bytes;
        onBytes(bytes);
        s.onEvent?.({ type: 'Resumed', path: file.path, blob: job.key, bytes });
      }
    }
    // nodes that start together each begin with another blob; alone, the manifest's order
    order = swarm && dir?.self ? rotate([...jobs].sort((a, b) => (a.key < b.key ? -1 : 1)), rotationOf(dir.self, jobs.length)) : jobs;
    // a worker waiting for a peer ends at once when the delivery stops
    stop.signal.addEventListener('abort', notify, { once: true });
    if (swarm) {
      ticker = setInterval(tick, pollMs);
      unwatch = swarm.watch?.(notify);
    }

    const runTask = async (t: Task, buffers: Buffer[]): Promise<void> => {
      const { job, chunk } = t;
      const partial = await openPartial(job, layout, s, hold);
      if (!chunk.done) {
        if (s.peers) await refreshPeers(job, s);
        const taskSignal = AbortSignal.any([stop.signal, job.abort.signal]);
        try {
          await fetchChunk(job, chunk, partial, s, counters, onBytes, taskSignal, buffers);
        } catch (err) {
          // it gave way to an earlier claim: what it wrote stays in the chunk, and the blob waits
          if (job.abort.signal.aborted && !stop.signal.aborted) return;
          throw err;
        }
        // recorded by a group commit while this worker fetches on; finish() waits for every
        // commit and throws its error
        partial.complete(chunk).catch(() => undefined);
        job.remaining--;
      }
      if (job.remaining > 0) return;
      const actual = await partial.finish();
      if (actual === job.file.digest.hex) {
        await publish(job, layout);
        job.phase = 'done';
        job.claim = undefined;
        s.onEvent?.({ type: 'BlobPublished', path: job.file.path, blob: job.key, size: job.file.size });
        onPublished(job.file);
        void announce({ state: 'Verified', digest: job.file.digest });
        return;
      }
      // nothing corrupt survives: the partial file goes, and the blob is fetched again, other sources first
      await partial.discard();
      onBytes(-job.file.size);
      job.digestAttempts++;
      const giveUp = job.digestAttempts >= s.maxDigestAttempts;
      const sources = [...job.contributors];
      s.onEvent?.({ type: 'DigestMismatch', path: job.file.path, blob: job.key, actual: `${job.file.digest.alg}:${actual}`, sources, action: giveUp ? 'Fail' : 'Refetch' });
      if (giveUp) {
        throw new DeliveryError('DigestMismatch', `${job.file.path}: expected ${job.key}, got ${job.file.digest.alg}:${actual} ${job.digestAttempts} times (sources: ${sources.join(', ')})`);
      }
      for (const id of job.contributors) job.suspects.add(id);
      job.contributors = new Set();
      job.partial = undefined;
      job.resumeDone = new Set();
      job.chunks = chunksOf(job.file.size, s.chunkSize);
      job.remaining = job.chunks.length;
      queue.unshift(...job.chunks.map((chunk) => ({ job, chunk })));
    };

    /** One stream: takes tasks until there are none left, with its two write batches. */
    const work = async (buffers: Buffer[]): Promise<void> => {
      for (;;) {
        if (failure !== undefined || stop.signal.aborted) return;
        const t = await nextTask();
        if (!t) {
          if (failure !== undefined || stop.signal.aborted) return;
          if (active === 0 && deciding === 0 && jobs.every((j) => j.phase === 'done')) return;
          // bounded: a blob waiting for a peer is looked at again after pollMs even if nothing wakes it
          await new Promise<void>((r) => {
            const timer = setTimeout(r, pollMs);
            wake.push(() => {
              clearTimeout(timer);
              r();
            });
          });
          continue;
        }
        active++;
        t.job.running++;
        try {
          await runTask(t, buffers);
        } catch (err) {
          failure ??= err;
          stop.abort(err);
        } finally {
          active--;
          if (--t.job.running === 0 && t.job.phase === 'yielding') t.job.phase = 'pending';
          notify();
        }
      }
    };

    const worker = async (): Promise<void> => {
      // page-aligned, so that full batches can be written with direct I/O; a blob may keep one
      // for its hash and hand back another in its place (see PartialBlob.write)
      const buffers = [takeAligned(WRITE_BATCH_BYTES), takeAligned(WRITE_BATCH_BYTES)];
      try {
        await work(buffers);
      } finally {
        for (const b of buffers) releaseAligned(b);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, s.streams) }, worker));
    if (failure === undefined && signal?.aborted) failure = new DeliveryError('Aborted', 'the delivery was cancelled');
    if (failure !== undefined) throw toDeliveryError(failure, signal);
  } finally {
    signal?.removeEventListener('abort', onOuterAbort);
    if (ticker) clearInterval(ticker);
    unwatch?.();
    // a claim this delivery leaves behind would make its peers wait for a stall timeout
    for (const j of jobs) {
      if (j.claim) void announce({ state: 'Idle', digest: j.file.digest });
      j.claim = undefined;
    }
    // partial files stay with their checkpoints: a later delivery resumes them
    for (const j of jobs) if (j.partial) await (await j.partial.catch(() => undefined))?.close();
  }
}

function bytesOf(job: BlobJob): number {
  return job.chunks.reduce((n, c) => n + c.written, 0);
}

/** Adds the peers the directory names for the blob now (after those already known, before the origins). */
async function refreshPeers(job: BlobJob, s: DownloadSettings): Promise<void> {
  if (!s.peers) return;
  const peers = await Promise.resolve(s.peers.holders(job.file.digest)).catch(() => [] as readonly PeerEndpoint[]);
  const known = new Set(job.sources.map((x) => x.url));
  const fresh = peers
    .map((p) => ({ p, url: peerBlobUrl(p, job.file.digest) }))
    .filter(({ url }) => !known.has(url))
    .map(({ p, url }): SourceState => ({ id: redact(url), url, headers: { authorization: `Bearer ${p.token}` }, peer: true, failures: 0, blockedUntil: 0 }));
  if (fresh.length > 0) job.sources.splice(job.sources.filter((x) => x.peer).length, 0, ...fresh);
}

function toDeliveryError(err: unknown, signal?: AbortSignal): DeliveryError {
  if (err instanceof DeliveryError) return err;
  if (signal?.aborted) return new DeliveryError('Aborted', 'the delivery was cancelled');
  return new DeliveryError('CacheIOError', (err as Error).message ?? String(err));
}

async function prepareJob(file: CacheManifestFile, layout: CacheLayout, s: DownloadSettings): Promise<BlobJob> {
  // peers are added when the blob starts (refreshPeers): who holds it changes while this delivery runs
  const sources: SourceState[] = file.sources.map((src) => ({ id: redact(src.url), url: src.url, headers: src.headers ?? {}, peer: false, failures: 0, blockedUntil: 0 }));
  const resumeDone = await PartialBlob.resumable(file, layout.partial(file.digest), layout.checkpoint(file.digest), s.chunkSize);
  const chunks = chunksOf(file.size, s.chunkSize);
  for (const c of chunks) {
    if (resumeDone.has(c.index)) {
      c.done = true;
      c.written = c.end - c.start;
    }
  }
  return {
    file,
    key: blobKey(file.digest),
    sources,
    chunks,
    remaining: chunks.filter((c) => !c.done).length,
    resumeDone,
    contributors: new Set(),
    suspects: new Set(),
    digestAttempts: 0,
    phase: 'pending',
    notBefore: 0,
    running: 0,
    abort: new AbortController(),
  };
}

function openPartial(job: BlobJob, layout: CacheLayout, s: DownloadSettings, hold: HoldBudget): Promise<PartialBlob> {
  if (!job.partial) {
    const opening = PartialBlob.open(job.file, layout.partial(job.file.digest), layout.checkpoint(job.file.digest), s.chunkSize, job.chunks, hold);
    job.partial = opening;
  }
  return job.partial;
}

/**
 * Bytes a stream gathers before it writes them (two buffers per stream, reused: one is read into
 * while the other is written). Plain http sockets read straight into them; other sources' reads
 * are copied in and dropped at once: held until their write, they outlived young-generation
 * collections, and 8 streams' worth of them in old space made V8 run a full collection every
 * 100 ms or so (a third of the event loop's time at 300 MiB/s).
 */
const WRITE_BATCH_BYTES = 1024 * 1024;

/**
 * Bytes a delivery may keep in memory for blobs' hashes (see PartialBlob.write): enough for one
 * chunk of each of four blobs that two streams share. Beyond it, bytes are read back from the file.
 */
const HOLD_BYTES = 64 * 1024 * 1024;

async function fetchChunk(
  job: BlobJob,
  chunk: Chunk,
  partial: PartialBlob,
  s: DownloadSettings,
  counters: DownloadCounters,
  onBytes: (n: number) => void,
  signal: AbortSignal,
  buffers: Buffer[],
): Promise<void> {
  let attempts = 0;
  let lastError = '';
  let lastKind: SourceError['kind'] = 'Unavailable';
  while (chunk.written < chunk.end - chunk.start) {
    const source = await pickSource(job, chunk, signal);
    const before = chunk.written;
    job.contributors.add(source.id);
    try {
      // Bytes reach the file in batches of a buffer's length, one write (a trip to libuv's thread
      // pool) each, while the socket is read into the other buffer. Bytes not yet written are
      // fetched again after a failure: chunk.written counts only what is in the file.
      await fetchRange(
        {
          url: source.url,
          headers: source.headers,
          start: chunk.start + chunk.written,
          end: chunk.end,
          fileSize: job.file.size,
          stallMs: s.stallTimeoutMs,
          signal,
          agents: s.agents,
        },
        {
          buffers,
          write: async (buf, n) => {
            const replacement = await partial.write(chunk, buf.subarray(0, n), buf).catch((err: NodeJS.ErrnoException) => {
              if (err.code === 'ENOSPC' || err.code === 'EDQUOT') {
                throw new DeliveryError('InsufficientCapacity', `${job.file.path}: the cache filesystem is full (${err.code}); the partial file is kept for a later try`);
              }
              throw new DeliveryError('CacheIOError', `${job.file.path}: writing the partial file failed: ${err.message}`);
            });
            if (source.peer) counters.peerBytes += n;
            else counters.originBytes += n;
            onBytes(n);
            if (s.bucket) await s.bucket.take(n, signal);
            return replacement;
          },
        },
      );
      source.failures = 0;
    } catch (err) {
      // the bytes received before a stall, a dead source or an abort were written (fetchRange
      // does that), so the retry asks only for the rest
      if (signal.aborted) throw signal.reason ?? err;
      if (err instanceof DeliveryError) throw err;
      const e = err instanceof SourceError ? err : new SourceError('Unavailable', (err as Error).message);
      lastError = e.message;
      lastKind = e.kind;
      if (chunk.written > before) {
        // it made progress before failing (a stall, a dead peer): continue from the bytes received, at once
        attempts = 0;
        source.failures = 0;
        continue;
      }
      attempts++;
      source.failures++;
      const permanent = source.peer && (e.kind === 'NotFound' || e.kind === 'BadResponse');
      const retryInMs = permanent ? Infinity : backoffMs(source.failures, s.backoff);
      source.blockedUntil = Date.now() + retryInMs;
      s.onEvent?.({ type: 'SourceFailed', path: job.file.path, blob: job.key, source: source.id, peer: source.peer, error: e.message, retryInMs });
      if (attempts >= s.maxAttemptsWithoutProgress) {
        throw new DeliveryError(lastKind === 'Stalled' ? 'Stalled' : 'SourceUnavailable', `${job.file.path}: ${attempts} attempts without a byte; last: ${lastError}`);
      }
    }
  }
}

/**
 * The first source in order (peers, then origins; suspects of a digest mismatch last) not backing
 * off, where several peers that are not backing off share the chunks (by chunk index); waits for
 * one otherwise.
 */
async function pickSource(job: BlobJob, chunk: Chunk, signal: AbortSignal): Promise<SourceState> {
  for (;;) {
    const ordered = [...job.sources.filter((x) => !job.suspects.has(x.id)), ...job.sources.filter((x) => job.suspects.has(x.id))];
    if (ordered.length === 0) throw new DeliveryError('SourceUnavailable', `${job.file.path}: no source (no peer holds it and the manifest lists no URL)`);
    const now = Date.now();
    const ready = ordered.filter((x) => x.blockedUntil <= now);
    if (ready.length > 0) {
      const peers = ready[0].peer ? ready.filter((x) => x.peer && !job.suspects.has(x.id)) : [];
      return peers.length > 1 ? peers[chunk.index % peers.length] : ready[0];
    }
    const next = Math.min(...ordered.map((x) => x.blockedUntil));
    if (next === Infinity) throw new DeliveryError('SourceUnavailable', `${job.file.path}: every source refused it for good`);
    await sleep(next - now, signal);
  }
}

async function publish(job: BlobJob, layout: CacheLayout): Promise<void> {
  const target = layout.blob(job.file.digest);
  const partialPath = layout.partial(job.file.digest);
  if (job.file.size === 0) await fs.writeFile(partialPath, '');
  await fs.chmod(partialPath, 0o444);
  await fs.rename(partialPath, target);
  await fsyncDir(dirname(target));
  await fs.rm(layout.checkpoint(job.file.digest), { force: true });
}
