// A `file:` source: a LOCAL artifact's file, read from the same path on this node (shared storage
// such as NFS mounted alike on every node). It takes the place of an HTTP range request, so the
// bytes go through the same pipeline as a download: written to the partial file, hashed while
// they are copied, verified against the manifest before anything is published.
import { createReadStream, promises as fs } from 'fs';
import { fileURLToPath } from 'url';
import { DeliveryError, SourceError } from './errors';

/** 1 MiB reads: the size of the read-back buffer a download uses. */
const READ_BYTES = 1024 * 1024;

/** Streams bytes [start, end) of the local file `url` names to `sink`, each read awaited before the next. */
export async function readLocalRange(url: URL, req: { start: number; end: number; fileSize: number; signal?: AbortSignal }, sink: (buf: Buffer) => Promise<void>): Promise<void> {
  const path = fileURLToPath(url);
  const st = await fs.stat(path).catch((err: NodeJS.ErrnoException) => {
    // Nothing else serves this file and waiting will not bring it: the delivery fails now, saying why.
    throw new DeliveryError('SourceUnavailable', `local file ${path} cannot be read on this node (${err.code ?? err.message}); a LOCAL artifact is read from the same path on every node that holds it (shared storage such as NFS)`);
  });
  if (!st.isFile()) throw new DeliveryError('SourceUnavailable', `local path ${path} is not a regular file on this node`);
  if (st.size !== req.fileSize) {
    throw new DeliveryError('DigestMismatch', `local file ${path} is ${st.size} bytes on this node, the manifest says ${req.fileSize}: it changed after the artifact was resolved, or this node sees another file at that path`);
  }
  if (req.end <= req.start) return;
  const stream = createReadStream(path, { start: req.start, end: req.end - 1, highWaterMark: READ_BYTES, signal: req.signal });
  let want = req.end - req.start;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      want -= chunk.length;
      await sink(chunk);
    }
  } catch (err) {
    if (err instanceof DeliveryError || req.signal?.aborted) throw err;
    throw new SourceError('Unavailable', `local file ${path}: ${(err as Error).message}`);
  } finally {
    stream.destroy();
  }
  if (want > 0) throw new SourceError('Unavailable', `local file ${path} ended ${want} bytes short (truncated while it was read?)`);
}
