import { promises as fs } from 'fs';
import { dirname } from 'path';
import { DeliveryError, SourceError } from './errors';
import type { CacheEvent } from './events';
import { CacheLayout, fsyncDir } from './layout';
import { blobKey, type CacheManifestFile } from './manifest';
import { type Chunk, chunksOf, PartialBlob } from './partial-blob';
import { peerBlobUrl, type PeerDirectory } from './peers';
import { fetchRange, redact, type HttpAgents } from './range-fetch';
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
  readonly sources: SourceState[];
  chunks: Chunk[];
  remaining: number;
  partial?: Promise<PartialBlob>;
  /** chunks a checkpoint of an earlier run holds */
  resumeDone: Set<number>;
  contributors: Set<string>;
  suspects: Set<string>;
  digestAttempts: number;
}

interface Task {
  readonly job: BlobJob;
  readonly chunk: Chunk;
}

export function backoffMs(failures: number, b: Backoff, random = Math.random): number {
  const base = Math.min(b.maxMs, b.initialMs * 2 ** Math.max(0, failures - 1));
  // up to 20 % jitter so that a fleet does not retry the origin in lockstep
  return Math.min(b.maxMs, Math.round(base * (1 + random() * 0.2)));
}

/**
 * Downloads blobs into `blobs/`: all chunks of all files share `streams` workers, peers that
 * hold a blob are tried before its origins, and a blob is renamed into place only after its
 * whole-file hash matched. `onBytes` sees every byte written to disk (negative when a corrupt
 * file is thrown away); `onPublished` each blob once it is visible.
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
  let failure: unknown;
  let wake: Array<() => void> = [];
  const notify = (): void => {
    const w = wake;
    wake = [];
    for (const r of w) r();
  };

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
      if (job.remaining === 0) queue.push({ job, chunk: job.chunks[0] ?? { index: 0, start: 0, end: 0, written: 0, done: true } });
      for (const c of job.chunks) if (!c.done) queue.push({ job, chunk: c });
    }

    const runTask = async (t: Task): Promise<void> => {
      const { job, chunk } = t;
      const partial = await openPartial(job, layout, s);
      if (!chunk.done) {
        await fetchChunk(job, chunk, partial, s, counters, onBytes, stop.signal);
        await partial.complete(chunk);
        job.remaining--;
      }
      if (job.remaining > 0) return;
      const actual = await partial.finish();
      if (actual === job.file.digest.hex) {
        await publish(job, layout);
        s.onEvent?.({ type: 'BlobPublished', path: job.file.path, blob: job.key, size: job.file.size });
        onPublished(job.file);
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

    const worker = async (): Promise<void> => {
      for (;;) {
        if (failure !== undefined || stop.signal.aborted) return;
        const t = queue.shift();
        if (!t) {
          if (active === 0) return;
          await new Promise<void>((r) => wake.push(r));
          continue;
        }
        active++;
        try {
          await runTask(t);
        } catch (err) {
          failure ??= err;
          stop.abort(err);
        } finally {
          active--;
          notify();
        }
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, s.streams) }, worker));
    if (failure === undefined && signal?.aborted) failure = new DeliveryError('Aborted', 'the delivery was cancelled');
    if (failure !== undefined) throw toDeliveryError(failure, signal);
  } finally {
    signal?.removeEventListener('abort', onOuterAbort);
    // partial files stay with their checkpoints: a later delivery resumes them
    for (const j of jobs) if (j.partial) await (await j.partial.catch(() => undefined))?.close();
  }
}

function toDeliveryError(err: unknown, signal?: AbortSignal): DeliveryError {
  if (err instanceof DeliveryError) return err;
  if (signal?.aborted) return new DeliveryError('Aborted', 'the delivery was cancelled');
  return new DeliveryError('CacheIOError', (err as Error).message ?? String(err));
}

async function prepareJob(file: CacheManifestFile, layout: CacheLayout, s: DownloadSettings): Promise<BlobJob> {
  const peers = s.peers ? await Promise.resolve(s.peers.holders(file.digest)).catch(() => []) : [];
  const sources: SourceState[] = [
    ...peers.map((p) => {
      const url = peerBlobUrl(p, file.digest);
      return { id: redact(url), url, headers: { authorization: `Bearer ${p.token}` }, peer: true, failures: 0, blockedUntil: 0 };
    }),
    ...file.sources.map((src) => ({ id: redact(src.url), url: src.url, headers: src.headers ?? {}, peer: false, failures: 0, blockedUntil: 0 })),
  ];
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
  };
}

function openPartial(job: BlobJob, layout: CacheLayout, s: DownloadSettings): Promise<PartialBlob> {
  if (!job.partial) {
    const opening = PartialBlob.open(job.file, layout.partial(job.file.digest), layout.checkpoint(job.file.digest), s.chunkSize, job.chunks);
    job.partial = opening;
  }
  return job.partial;
}

async function fetchChunk(
  job: BlobJob,
  chunk: Chunk,
  partial: PartialBlob,
  s: DownloadSettings,
  counters: DownloadCounters,
  onBytes: (n: number) => void,
  signal: AbortSignal,
): Promise<void> {
  let attempts = 0;
  let lastError = '';
  let lastKind: SourceError['kind'] = 'Unavailable';
  while (chunk.written < chunk.end - chunk.start) {
    const source = await pickSource(job, signal);
    const before = chunk.written;
    try {
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
        async (buf) => {
          await partial.write(chunk, buf).catch((err: NodeJS.ErrnoException) => {
            if (err.code === 'ENOSPC' || err.code === 'EDQUOT') {
              throw new DeliveryError('InsufficientCapacity', `${job.file.path}: the cache filesystem is full (${err.code}); the partial file is kept for a later try`);
            }
            throw new DeliveryError('CacheIOError', `${job.file.path}: writing the partial file failed: ${err.message}`);
          });
          if (source.peer) counters.peerBytes += buf.length;
          else counters.originBytes += buf.length;
          job.contributors.add(source.id);
          onBytes(buf.length);
          if (s.bucket) await s.bucket.take(buf.length, signal);
        },
      );
      source.failures = 0;
    } catch (err) {
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

/** The first source in order (peers, then origins; suspects of a digest mismatch last) not backing off; waits for one otherwise. */
async function pickSource(job: BlobJob, signal: AbortSignal): Promise<SourceState> {
  for (;;) {
    const ordered = [...job.sources.filter((x) => !job.suspects.has(x.id)), ...job.sources.filter((x) => job.suspects.has(x.id))];
    if (ordered.length === 0) throw new DeliveryError('SourceUnavailable', `${job.file.path}: no source (no peer holds it and the manifest lists no URL)`);
    const now = Date.now();
    const ready = ordered.find((x) => x.blockedUntil <= now);
    if (ready) return ready;
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
