import { BatchFiller } from './batch-filler';

describe('BatchFiller', () => {
  it('hands the sink full buffers in order, one write at a time, and takes a replacement for a buffer the sink keeps', async () => {
    const written: Buffer[] = [];
    const kept: Buffer[] = [];
    let inFlight = 0;
    let most = 0;
    const sink = {
      buffers: [Buffer.alloc(8), Buffer.alloc(8)],
      write: async (buf: Buffer, n: number): Promise<Buffer | undefined> => {
        most = Math.max(most, ++inFlight);
        await new Promise((r) => setTimeout(r, 5));
        written.push(Buffer.from(buf.subarray(0, n)));
        inFlight--;
        // every other buffer is kept (as a blob keeps bytes for its hash): another takes its place
        if (written.length % 2 === 1) {
          kept.push(buf);
          return Buffer.alloc(8);
        }
        return undefined;
      },
    };
    const first = sink.buffers.slice();
    const filler = new BatchFiller(sink);
    const input = Buffer.from(Array.from({ length: 61 }, (_, i) => i));
    for (let off = 0; off < input.length; ) {
      // 5 bytes at a time, some copied, some put in place as a socket read would
      const piece = input.subarray(off, off + 5);
      if (off % 2 === 0) {
        off += filler.copy(piece);
      } else {
        const t = filler.target();
        const n = Math.min(t.length, piece.length);
        piece.copy(t, 0, 0, n);
        filler.advance(n);
        off += n;
      }
      await filler.whenReady();
    }
    await filler.flush();
    expect(Buffer.concat(written).equals(input)).toBe(true);
    expect(written.slice(0, -1).every((b) => b.length === 8)).toBe(true);
    expect(most).toBe(1);
    // the kept buffers are no longer the filler's: the sink's list names their replacements
    for (const b of kept) expect(sink.buffers).not.toContain(b);
    expect(kept).toContain(first[0]);
  });

  it('stops with the sink’s error and takes nothing more', async () => {
    const filler = new BatchFiller({
      buffers: [Buffer.alloc(4), Buffer.alloc(4)],
      write: () => Promise.reject(new Error('disk full')),
    });
    filler.copy(Buffer.alloc(4));
    await filler.whenReady();
    await expect(filler.flush()).rejects.toThrow('disk full');
    expect(filler.ready).toBe(false);
    expect(filler.copy(Buffer.alloc(4))).toBe(0);
  });
});
