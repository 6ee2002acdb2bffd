import { open, stat } from 'node:fs/promises';
import { isAbsolute, join, normalize, sep } from 'node:path';

/**
 * Reads byte ranges of an artifact's files, so an estimate needs only the headers of files that
 * are tens of GB: the model-delivery service plugs HTTP `Range` requests against the hub (or a
 * peer) in here, a node a directory of its cache. `path` is relative to the artifact's root.
 */
export interface RangeReader {
  /**
   * Bytes `start..endInclusive` of `path`. Fewer bytes (possibly none) when the file ends
   * before `endInclusive`; never more. Rejects when the file does not exist.
   */
  readRange(path: string, start: number, endInclusive: number): Promise<Uint8Array>;
  /** The whole of a small file (config.json, the safetensors index), at most `maxBytes`. */
  readSmallFile(path: string, maxBytes: number): Promise<Uint8Array>;
}

/** A RangeReader over a directory on the local file system (a node's cache tree). */
export class DirectoryRangeReader implements RangeReader {
  constructor(private readonly root: string) {}

  async readRange(path: string, start: number, endInclusive: number): Promise<Uint8Array> {
    const handle = await open(this.resolve(path), 'r');
    try {
      const length = Math.max(0, endInclusive - start + 1);
      const buffer = Buffer.alloc(length);
      let filled = 0;
      while (filled < length) {
        const { bytesRead } = await handle.read(buffer, filled, length - filled, start + filled);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      return new Uint8Array(buffer.buffer, buffer.byteOffset, filled);
    } finally {
      await handle.close();
    }
  }

  async readSmallFile(path: string, maxBytes: number): Promise<Uint8Array> {
    const file = this.resolve(path);
    const { size } = await stat(file);
    if (size > maxBytes) {
      throw new Error(`${path} is ${size} bytes, more than the ${maxBytes} bytes allowed for it`);
    }
    return this.readRange(path, 0, size - 1);
  }

  /** Keeps every read inside the root: an artifact's file list is data from outside. */
  private resolve(path: string): string {
    const relative = normalize(path);
    if (isAbsolute(relative) || relative === '..' || relative.startsWith(`..${sep}`)) {
      throw new Error(`${path} is outside the artifact root`);
    }
    return join(this.root, relative);
  }
}
