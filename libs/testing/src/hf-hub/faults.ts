/** Fault switches a spec flips while the hub runs, and the byte counters it asserts on. */

export interface HubFault {
  /** Serve file bytes at most this fast (bytes per second). */
  bytesPerSecond?: number;
  /** Stop sending file bytes after this many in one response and keep the connection open: a stalled download. */
  stallAfterBytes?: number;
  /** Invert the bytes of this range of the file (absolute offsets) while every header still claims the right content. */
  corrupt?: { offset: number; length: number };
  /** Wait this long before answering any request for the repository (or the file's resolve and CDN requests). */
  latencyMs?: number;
  /** Answer every request for the repository (or the file) with this status. */
  status?: 401 | 403 | 404 | 429 | 500 | 502 | 503;
}

export interface ServedRequest {
  method: string;
  /** URL path and query as received. */
  url: string;
  status: number;
  repo?: string;
  file?: string;
  /** Inclusive byte range of the file requested, when it was a range request. */
  range?: [number, number];
  /** File bytes written to the socket (headers and JSON not counted). */
  bytes: number;
}

const MAX_REQUEST_LOG = 5000;
const MAX_RANGES_PER_FILE = 1000;

export class HubFaults {
  private readonly byKey = new Map<string, HubFault>();

  /** Set (or with `undefined` clear) the fault of a repository, or of one file of it. Takes effect on the next chunk sent. */
  set(repo: string, path: string | undefined, fault: HubFault | undefined): void {
    const key = faultKey(repo, path);
    if (fault) this.byKey.set(key, { ...fault });
    else this.byKey.delete(key);
  }

  clear(): void {
    this.byKey.clear();
  }

  /** The file's own fault fields win over the repository's. */
  of(repo: string, path?: string): HubFault {
    return { ...this.byKey.get(faultKey(repo, undefined)), ...(path ? this.byKey.get(faultKey(repo, path)) : undefined) };
  }
}

function faultKey(repo: string, path: string | undefined): string {
  return `${repo}\0${path ?? ''}`;
}

export class HubStats {
  private readonly log: ServedRequest[] = [];
  private readonly bytes = new Map<string, number>();
  private readonly ranges = new Map<string, [number, number][]>();

  record(request: ServedRequest): void {
    this.log.push(request);
    if (this.log.length > MAX_REQUEST_LOG) this.log.shift();
  }

  addBytes(repo: string, path: string, n: number): void {
    const key = `${repo}\0${path}`;
    this.bytes.set(key, (this.bytes.get(key) ?? 0) + n);
  }

  addRange(repo: string, path: string, range: [number, number]): void {
    const key = `${repo}\0${path}`;
    const list = this.ranges.get(key) ?? [];
    list.push(range);
    if (list.length > MAX_RANGES_PER_FILE) list.shift();
    this.ranges.set(key, list);
  }

  /** File bytes served: of one file, of one repository, or in all. */
  bytesServed(repo?: string, path?: string): number {
    let sum = 0;
    for (const [key, n] of this.bytes) {
      const [r, p] = key.split('\0');
      if ((repo === undefined || r === repo) && (path === undefined || p === path)) sum += n;
    }
    return sum;
  }

  /** Byte ranges (inclusive) asked of one file, oldest first; a whole-file GET counts as [0, size-1]. */
  rangesServed(repo: string, path: string): readonly [number, number][] {
    return this.ranges.get(`${repo}\0${path}`) ?? [];
  }

  /** The last 5000 requests, oldest first. */
  get requests(): readonly ServedRequest[] {
    return this.log;
  }

  reset(): void {
    this.log.length = 0;
    this.bytes.clear();
    this.ranges.clear();
  }
}
