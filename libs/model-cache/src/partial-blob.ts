import type { Hash } from 'crypto';
import { constants as fsConstants, promises as fs } from 'fs';
import type { FileHandle } from 'fs/promises';
import { DIRECT_IO_ALIGN, isAligned, releaseAligned, takeAligned } from './aligned-buffers';
import { createBlobHasher } from './hashing';
import { writeFileAtomic } from './layout';
import type { CacheManifestFile } from './manifest';

export interface Chunk {
  readonly index: number;
  /** file offset of the first byte */
  readonly start: number;
  /** file offset of the last byte + 1 */
  readonly end: number;
  /** bytes of this chunk written to the partial file, from `start` */
  written: number;
  /** written, synced and recorded in the checkpoint: survives a crash */
  done: boolean;
}

interface Checkpoint {
  version: 1;
  digest: string;
  size: number;
  chunkSize: number;
  done: number[];
}

const READ_BACK = 1 << 20;
/** errors of a direct write that mean "not this way", not "the disk failed" */
const DIRECT_REFUSED = new Set(['EINVAL', 'EOPNOTSUPP', 'ENOTSUP']); // bytes read per step when the hash catches up on bytes written out of order

/**
 * Memory the blobs of one delivery may keep for bytes written ahead of their hash (see
 * PartialBlob.write): with it, streams that share a blob cost no read-back of the file, which with
 * direct I/O is a read from the device.
 */
export class HoldBudget {
  used = 0;
  constructor(readonly limit: number) {}
}

export function chunksOf(size: number, chunkSize: number): Chunk[] {
  const chunks: Chunk[] = [];
  for (let start = 0, i = 0; start < size; start += chunkSize, i++) {
    chunks.push({ index: i, start, end: Math.min(size, start + chunkSize), written: 0, done: false });
  }
  return chunks;
}

/**
 * A blob being downloaded: a partial file written at chunk offsets by several streams at once,
 * a checkpoint of the chunks that are synced, and the whole-file hash advanced in file order:
 * bytes that arrive in order are hashed straight from the socket's buffer, bytes written ahead
 * of the hash are read back (from the page cache) when the hash reaches them.
 */
export class PartialBlob {
  private readonly hasher: Hash;
  private hashed = 0;
  private readingBack = false;
  private hashError: Error | undefined;
  private hashWaiters: Array<() => void> = [];
  /** The group commit running or last run: a datasync and a checkpoint (see complete()). */
  private commit: Promise<void> = Promise.resolve();
  /** The commit waiting for the running one to end; chunks completed meanwhile join it. */
  private nextCommit: Promise<void> | undefined;
  /** Chunks written in full, waiting for the commit that makes them durable. */
  private unsynced: Chunk[] = [];
  private readBuf: Buffer | undefined;
  /**
   * The same file opened for direct I/O (O_DIRECT), when the filesystem allows it: aligned writes
   * go from the stream's buffer to the device without a copy into the page cache. That copy was
   * the largest cost of a download here (perf: a third to half of the downloader's CPU, more when
   * several threads write at once), and the weights are read by an engine much later, if ever
   * from this page cache. Unaligned writes (the end of a file, a range resumed mid-page) take
   * the ordinary handle; the two never write the same page.
   */
  private direct: FileHandle | undefined;
  /** bytes written ahead of the hash and kept for it, by file offset (see write()) */
  private readonly held = new Map<number, { bytes: Buffer; whole: Buffer }>();
  private hold: HoldBudget | undefined;
  private closed = false;

  private constructor(
    readonly file: CacheManifestFile,
    readonly chunks: Chunk[],
    private readonly fh: FileHandle,
    private readonly partialPath: string,
    private readonly checkpointPath: string,
    private readonly chunkSize: number,
  ) {
    this.hasher = createBlobHasher(file.digest.alg, file.size);
  }

  /** Bytes of completed chunks a checkpoint says are on disk (0 if none or it does not match). */
  static async resumable(file: CacheManifestFile, partialPath: string, checkpointPath: string, chunkSize: number): Promise<Set<number>> {
    const done = new Set<number>();
    try {
      const cp = JSON.parse(await fs.readFile(checkpointPath, 'utf8')) as Checkpoint;
      if (cp.version !== 1 || cp.digest !== `${file.digest.alg}:${file.digest.hex}` || cp.size !== file.size || cp.chunkSize !== chunkSize) return done;
      const st = await fs.stat(partialPath);
      for (const i of cp.done) {
        const end = Math.min(file.size, (i + 1) * chunkSize);
        // a checkpoint never claims bytes beyond what the file holds
        if (Number.isInteger(i) && i >= 0 && end <= st.size) done.add(i);
      }
    } catch {
      // no checkpoint or no partial file: start from nothing
    }
    return done;
  }

  /** Opens (or creates) the partial file; `chunks` already say which chunks a checkpoint holds. */
  static async open(file: CacheManifestFile, partialPath: string, checkpointPath: string, chunkSize: number, chunks: Chunk[], hold?: HoldBudget): Promise<PartialBlob> {
    const resuming = chunks.some((c) => c.done);
    if (!resuming) await fs.rm(checkpointPath, { force: true });
    const fh = await fs.open(partialPath, resuming ? 'r+' : 'w+', 0o600);
    const blob = new PartialBlob(file, chunks, fh, partialPath, checkpointPath, chunkSize);
    blob.hold = hold;
    // a filesystem without direct I/O (tmpfs on older kernels) refuses the flag: ordinary writes only
    blob.direct = await fs.open(partialPath, fsConstants.O_RDWR | fsConstants.O_DIRECT).catch(() => undefined);
    // bytes of a previous run are re-read for the hash, not fetched again
    blob.pump();
    return blob;
  }

  get size(): number {
    return this.file.size;
  }

  /**
   * Writes the next bytes of a chunk at its own offset; awaited by the stream before it reads
   * more. Bytes at the hash's position are hashed from `buf` at once. Bytes ahead of it (another
   * stream works on the part before) are kept in memory until the hash gets to them, if `whole`
   * (the buffer `buf` is a view of) is given and the delivery's HoldBudget has room: then `whole`
   * belongs to the blob and the stream gets a fresh buffer of the same size in return. Bytes not
   * kept are read back from the file when the hash gets there.
   */
  async write(chunk: Chunk, buf: Buffer, whole?: Buffer): Promise<Buffer | undefined> {
    const at = chunk.start + chunk.written;
    if (at + buf.length > chunk.end) throw new Error(`chunk ${chunk.index} of ${this.file.path}: ${buf.length} bytes past its end`);
    let off = 0;
    while (off < buf.length) {
      const part = buf.subarray(off);
      const direct = this.direct && (at + off) % DIRECT_IO_ALIGN === 0 && part.length % DIRECT_IO_ALIGN === 0 && isAligned(part) ? this.direct : undefined;
      try {
        const { bytesWritten } = await (direct ?? this.fh).write(part, 0, part.length, at + off);
        off += bytesWritten;
      } catch (err) {
        // the device wants another alignment than the page (EINVAL), or the filesystem has no
        // direct I/O after all: ordinary writes from now on
        if (!direct || !DIRECT_REFUSED.has((err as NodeJS.ErrnoException).code ?? '')) throw err;
        this.stopDirect();
      }
    }
    chunk.written += buf.length;
    if (!this.readingBack && at === this.hashed) {
      this.hasher.update(buf);
      this.hashed += buf.length;
      this.wakeHashWaiters();
      return undefined;
    }
    let replacement: Buffer | undefined;
    if (whole && this.hold && !this.closed && this.hold.used + whole.length <= this.hold.limit) {
      this.held.set(at, { bytes: buf, whole });
      this.hold.used += whole.length;
      replacement = takeAligned(whole.length);
    }
    this.pump();
    return replacement;
  }

  /**
   * Makes a chunk durable and records it, so a crash re-fetches only chunks not recorded. Group
   * commit: one datasync and one checkpoint write cover every chunk completed before the commit
   * starts, so 8 streams finishing chunks pay for about one sync at a time, not eight in a row.
   * Resolves once this chunk is recorded; a caller may go on fetching meanwhile, and finish()
   * waits for every commit (and throws its error).
   */
  complete(chunk: Chunk): Promise<void> {
    this.unsynced.push(chunk);
    this.pump();
    if (this.nextCommit) return this.nextCommit;
    const next = this.commit
      .catch(() => undefined)
      .then(async () => {
        // chunks completed from here on join the commit after this one
        this.nextCommit = undefined;
        const batch = this.unsynced;
        this.unsynced = [];
        await this.fh.datasync();
        for (const c of batch) c.done = true;
        await writeFileAtomic(
          this.checkpointPath,
          JSON.stringify({
            version: 1,
            digest: `${this.file.digest.alg}:${this.file.digest.hex}`,
            size: this.file.size,
            chunkSize: this.chunkSize,
            done: this.chunks.filter((c) => c.done).map((c) => c.index),
          } satisfies Checkpoint),
        );
      });
    this.nextCommit = next;
    this.commit = next;
    return next;
  }

  /** Once every chunk is done: the hex digest of the whole file, after the file is synced and closed. */
  async finish(): Promise<string> {
    this.pump();
    while (this.hashed < this.file.size) {
      if (this.hashError) throw this.hashError;
      this.pump();
      if (this.hashed >= this.file.size) break;
      if (!this.readingBack) throw new Error(`${this.file.path}: finish() before every chunk was written (hashed ${this.hashed} of ${this.file.size})`);
      await new Promise<void>((r) => this.hashWaiters.push(r));
    }
    if (this.hashError) throw this.hashError;
    await this.commit;
    await this.fh.sync();
    await this.close();
    return this.hasher.digest('hex');
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const h of this.held.values()) this.release(h);
    this.held.clear();
    this.readBuf = undefined;
    this.stopDirect();
    await this.fh.close().catch(() => undefined);
  }

  private release(h: { whole: Buffer }): void {
    releaseAligned(h.whole);
    if (this.hold) this.hold.used -= h.whole.length;
  }

  private stopDirect(): void {
    void this.direct?.close().catch(() => undefined);
    this.direct = undefined;
  }

  /** Throws the bytes away: closes and deletes the partial file and its checkpoint. */
  async discard(): Promise<void> {
    await this.close();
    await this.commit.catch(() => undefined);
    await fs.rm(this.partialPath, { force: true });
    await fs.rm(this.checkpointPath, { force: true });
  }

  /** end of the bytes written without a gap from the hash's position */
  private contiguousEnd(): number {
    let end = this.hashed;
    for (let i = Math.floor(end / this.chunkSize); i < this.chunks.length; i++) {
      const c = this.chunks[i];
      if (c.start > end) break;
      end = c.start + c.written;
      if (c.written < c.end - c.start) break;
    }
    return end;
  }

  private pump(): void {
    if (this.readingBack || this.hashError) return;
    if (this.contiguousEnd() <= this.hashed) return;
    this.readingBack = true;
    this.readBack().catch((err: Error) => {
      this.hashError = err;
      this.readingBack = false;
      this.wakeHashWaiters();
    });
  }

  private async readBack(): Promise<void> {
    for (;;) {
      const end = this.contiguousEnd();
      if (end <= this.hashed) break;
      const kept = this.held.get(this.hashed);
      if (kept) {
        this.held.delete(this.hashed);
        this.hasher.update(kept.bytes);
        this.hashed += kept.bytes.length;
        this.release(kept);
        this.wakeHashWaiters();
        continue;
      }
      // a read stops where kept bytes begin: they are hashed from memory
      let next = end;
      for (const k of this.held.keys()) if (k > this.hashed && k < next) next = k;
      const buf = (this.readBuf ??= Buffer.allocUnsafe(READ_BACK));
      const n = Math.min(buf.length, next - this.hashed);
      const { bytesRead } = await this.fh.read(buf, 0, n, this.hashed);
      if (bytesRead <= 0) throw new Error(`${this.partialPath}: short read at ${this.hashed}`);
      this.hasher.update(buf.subarray(0, bytesRead));
      this.hashed += bytesRead;
      this.wakeHashWaiters();
    }
    // no await between the last check and this: a write that lands now sees readingBack false
    this.readingBack = false;
  }

  private wakeHashWaiters(): void {
    const w = this.hashWaiters;
    this.hashWaiters = [];
    for (const r of w) r();
  }
}
