/**
 * Where a ranged download's bytes go: into one of two buffers the caller owns, each handed to
 * `write` once it is full (or the range ends). Two, so that the socket is read into one while
 * the other is written to the file; `write` calls never overlap, so bytes reach the file (and
 * its hash) in order.
 */
export interface RangeSink {
  /** the two buffers, in turn; an entry is replaced when `write` keeps its buffer and returns another */
  readonly buffers: Buffer[];
  /**
   * Bytes [0, n) of `buf` are the range's next bytes; `buf` is not filled again before this
   * settles. Resolves with a buffer of the same size when it keeps `buf`: that one takes its place.
   */
  write(buf: Buffer, n: number): Promise<Buffer | undefined>;
}

/**
 * Fills a RangeSink's buffers in turn. A reader puts bytes into `target()` (in place, as a socket
 * read straight into it) or hands them to `copy()`; when both buffers are taken (one being
 * written, the other full) `ready` is false and the reader stops reading until `whenReady()`.
 */
export class BatchFiller {
  private cur: Buffer | undefined;
  private pos = 0;
  private writing: Promise<void> | undefined;
  /** a full buffer waiting for the write in flight */
  private full: Buffer | undefined;
  private failed: { error: unknown } | undefined;
  private waiters: Array<() => void> = [];

  constructor(private readonly sink: RangeSink) {
    if (sink.buffers.length !== 2 || sink.buffers[0] === sink.buffers[1] || sink.buffers[0].length === 0 || sink.buffers[1].length === 0) {
      throw new RangeError('RangeSink: expected two distinct, non-empty buffers');
    }
    this.cur = sink.buffers[0];
  }

  /** false while both buffers are taken: read nothing more until whenReady() */
  get ready(): boolean {
    return this.cur !== undefined && this.failed === undefined;
  }

  /** the sink's write failed (the disk): the download stops with this error */
  get error(): { error: unknown } | undefined {
    return this.failed;
  }

  /** The free part of the buffer being filled (never empty while `ready`). */
  target(): Buffer {
    if (!this.cur) throw new Error('BatchFiller: target() while not ready');
    return this.cur.subarray(this.pos);
  }

  /** `n` bytes were put into target() from its start. */
  advance(n: number): void {
    if (!this.cur || n > this.cur.length - this.pos) throw new Error(`BatchFiller: advance(${n}) past the buffer`);
    this.pos += n;
    if (this.pos === this.cur.length) this.handOff();
  }

  /** Copies `src` in; returns how many bytes it took (fewer than src.length when it stopped being ready). */
  copy(src: Buffer): number {
    let off = 0;
    while (off < src.length && this.ready) {
      const n = src.copy(this.target(), 0, off);
      off += n;
      this.advance(n);
    }
    return off;
  }

  /** Copies all of `src` in, waiting for room as needed; throws the sink's error if a write failed. */
  async put(src: Buffer): Promise<void> {
    for (let off = 0; off < src.length; ) {
      off += this.copy(src.subarray(off));
      if (this.failed) throw this.failed.error;
      await this.whenReady();
    }
  }

  /**
   * Ends the range: writes what is buffered and waits for it. After a failure of the source
   * (`err`) the bytes that did arrive are written all the same, so a retry asks only for the
   * rest, and `err` is thrown; a failed write of the sink is thrown in its place.
   */
  async end(err?: unknown): Promise<void> {
    if (err === undefined) return this.flush();
    if (!this.failed) await this.flush().catch(() => undefined);
    throw this.failed ? this.failed.error : err;
  }

  /** Settles when `ready` again, or the sink failed. */
  whenReady(): Promise<void> {
    if (this.ready || this.failed) return Promise.resolve();
    return new Promise((r) => this.waiters.push(r));
  }

  /** Writes what is buffered and waits for every write; throws the sink's error if one failed. */
  async flush(): Promise<void> {
    for (;;) {
      if (this.failed) throw this.failed.error;
      if (this.writing) {
        await this.writing.catch(() => undefined);
        continue;
      }
      if (!this.cur || this.pos === 0) return;
      const [buf, n] = [this.cur, this.pos];
      this.pos = 0;
      this.start(buf, n);
    }
  }

  private handOff(): void {
    const buf = this.cur as Buffer;
    if (this.writing) {
      this.full = buf;
      this.cur = undefined;
      return;
    }
    this.start(buf, buf.length);
    this.cur = this.other(buf);
    this.pos = 0;
  }

  private start(buf: Buffer, n: number): void {
    this.writing = this.sink.write(buf, n).then(
      (replacement) => {
        this.writing = undefined;
        let free = buf;
        if (replacement) {
          const i = this.sink.buffers.indexOf(buf);
          if (replacement.length !== buf.length || i < 0) {
            this.failed = { error: new Error('RangeSink.write: a replacement must stand for one of the buffers, of the same size') };
            this.wake();
            return;
          }
          this.sink.buffers[i] = free = replacement;
          // flush() writes the buffer being filled: the replacement is filled next
          if (this.cur === buf) this.cur = replacement;
        }
        if (this.full) {
          const next = this.full;
          this.full = undefined;
          this.start(next, next.length);
          this.cur = free;
          this.pos = 0;
          this.wake();
        }
      },
      (error: unknown) => {
        this.writing = undefined;
        this.failed = { error };
        this.wake();
      },
    );
  }

  private other(buf: Buffer): Buffer {
    return buf === this.sink.buffers[0] ? this.sink.buffers[1] : this.sink.buffers[0];
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const r of w) r();
  }
}
