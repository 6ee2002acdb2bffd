import { MAX_MODEL_CONFIG_BYTES } from './model-config';
import type { RangeReader } from './range-reader';
import { MAX_SAFETENSORS_HEADER_BYTES, MAX_SAFETENSORS_INDEX_BYTES } from './safetensors';

/** One file of a resolved manifest: where it is downloaded from, and whether that needs the artifact's token. */
export interface RemoteArtifactFile {
  path: string;
  url: string;
  /** Send `Authorization: Bearer <token>` (never past a redirect to another host). */
  needsToken: boolean;
  /** Bytes, from the manifest: a small file larger than its cap is refused without a request. */
  size?: number;
}

export interface HttpRangeReaderOptions {
  /** Deadline of one request, body included, ms. */
  requestTimeoutMs: number;
  /** The hub token, asked for only when a file needs it. */
  token?: () => Promise<string | undefined>;
  fetch?: typeof fetch;
  maxRedirects?: number;
}

/**
 * Why an HTTP read failed. `transient` (the source did not answer, answered 5xx, a 404 from a
 * hub that just resolved the file) means a later try may succeed; otherwise the artifact itself
 * is at fault (a file above its cap, a server that ignores Range) and trying again is useless.
 */
export class RangeReadError extends Error {
  constructor(
    message: string,
    readonly transient: boolean,
  ) {
    super(message);
    this.name = 'RangeReadError';
  }
}

/** The largest single read the estimate asks for: a safetensors header (the other caps are smaller). */
const MAX_READ_BYTES = Math.max(MAX_SAFETENSORS_HEADER_BYTES, MAX_SAFETENSORS_INDEX_BYTES, MAX_MODEL_CONFIG_BYTES);
const DEFAULT_MAX_REDIRECTS = 5;
const CONTENT_RANGE = /^bytes (\d+)-(\d+)\/(\d+|\*)$/;

/**
 * A RangeReader over a resolved manifest's download URLs: `Range` requests (two per safetensors
 * shard), redirects followed by hand so the token goes only to the host it was given for (a hub's
 * LFS redirect to a CDN never sees it), every request under a deadline, and never more bytes read
 * than asked, even from a server that ignores Range and answers 200 with the whole file.
 */
export class HttpRangeReader implements RangeReader {
  private readonly files: Map<string, RemoteArtifactFile>;
  private readonly fetchFn: typeof fetch;
  /** Requests sent, for tests and logs. */
  requests = 0;

  constructor(
    files: readonly RemoteArtifactFile[],
    private readonly options: HttpRangeReaderOptions,
  ) {
    this.files = new Map(files.map((f) => [f.path, f]));
    this.fetchFn = options.fetch ?? fetch;
  }

  async readRange(path: string, start: number, endInclusive: number): Promise<Uint8Array> {
    const length = endInclusive - start + 1;
    if (!Number.isSafeInteger(start) || start < 0 || !Number.isSafeInteger(length) || length < 1) {
      throw new RangeReadError(`${path}: bytes ${start}-${endInclusive} is not a range`, false);
    }
    if (length > MAX_READ_BYTES) throw new RangeReadError(`${path}: a read of ${length} bytes is above the ${MAX_READ_BYTES}-byte bound of an estimate`, false);
    const file = this.file(path);
    if (file.size !== undefined && start >= file.size) return new Uint8Array(0);
    return this.get(file, start, endInclusive);
  }

  async readSmallFile(path: string, maxBytes: number): Promise<Uint8Array> {
    const file = this.file(path);
    if (file.size !== undefined && file.size > maxBytes) {
      throw new RangeReadError(`${path} is ${file.size} bytes, more than the ${maxBytes} bytes allowed for it`, false);
    }
    if (file.size === 0) return new Uint8Array(0);
    // One byte more than allowed tells a file over the cap from one exactly at it.
    const bytes = await this.get(file, 0, Math.min(maxBytes, MAX_READ_BYTES));
    if (bytes.length > maxBytes) throw new RangeReadError(`${path} is more than the ${maxBytes} bytes allowed for it`, false);
    return bytes;
  }

  private file(path: string): RemoteArtifactFile {
    const file = this.files.get(path);
    if (!file) throw new RangeReadError(`${path} is not a file of the manifest`, false);
    return file;
  }

  private async get(file: RemoteArtifactFile, start: number, endInclusive: number): Promise<Uint8Array> {
    const want = endInclusive - start + 1;
    const first = new URL(file.url);
    const token = file.needsToken && this.options.token ? await this.options.token() : undefined;
    const signal = AbortSignal.timeout(this.options.requestTimeoutMs);
    const where = `${file.path} (${first.origin}${first.pathname})`;
    let url = first;
    for (let hop = 0; ; hop++) {
      const headers: Record<string, string> = { range: `bytes=${start}-${endInclusive}`, 'accept-encoding': 'identity' };
      if (token && url.host === first.host) headers.authorization = `Bearer ${token}`;
      let res: Response;
      try {
        this.requests++;
        res = await this.fetchFn(url, { headers, redirect: 'manual', signal });
      } catch (err) {
        throw new RangeReadError(`${where}: ${networkError(err, this.options.requestTimeoutMs)}`, true);
      }
      const location = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && location) {
        await res.body?.cancel();
        if (hop >= (this.options.maxRedirects ?? DEFAULT_MAX_REDIRECTS)) throw new RangeReadError(`${where}: more than ${this.options.maxRedirects ?? DEFAULT_MAX_REDIRECTS} redirects`, true);
        url = new URL(location, url);
        continue;
      }
      if (res.status === 416) {
        await res.body?.cancel();
        return new Uint8Array(0);
      }
      if (res.status === 206) {
        const m = CONTENT_RANGE.exec(res.headers.get('content-range') ?? '');
        if (!m || Number(m[1]) !== start) {
          await res.body?.cancel();
          throw new RangeReadError(`${where}: asked bytes ${start}-${endInclusive}, the answer's Content-Range is ${JSON.stringify(res.headers.get('content-range'))}`, true);
        }
        return readAtMost(res, want, where, this.options.requestTimeoutMs);
      }
      if (res.status === 200) {
        // A server that ignores Range sends the whole file: its first bytes are what was asked
        // for a read from 0; anything else would mean reading (and dropping) a whole shard.
        if (start !== 0) {
          await res.body?.cancel();
          throw new RangeReadError(`${where}: the server ignores Range (200 for bytes ${start}-${endInclusive}); an estimate reads only headers and does not download whole files`, false);
        }
        return readAtMost(res, want, where, this.options.requestTimeoutMs);
      }
      await res.body?.cancel();
      throw new RangeReadError(`${where}: HTTP ${res.status}${res.status === 401 || res.status === 403 ? ' (credentials refused)' : ''}`, true);
    }
  }
}

/** The first `want` bytes of the body; the rest is never read (the connection is cancelled). */
async function readAtMost(res: Response, want: number, where: string, timeoutMs: number): Promise<Uint8Array> {
  const out = new Uint8Array(want);
  let filled = 0;
  if (!res.body) return out.subarray(0, 0);
  const reader = res.body.getReader();
  try {
    while (filled < want) {
      const { done, value } = await reader.read();
      if (done) break;
      const take = Math.min(value.length, want - filled);
      out.set(value.subarray(0, take), filled);
      filled += take;
    }
  } catch (err) {
    throw new RangeReadError(`${where}: the answer broke off (${networkError(err, timeoutMs)})`, true);
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return out.subarray(0, filled);
}

function networkError(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `no answer within ${timeoutMs} ms`;
  return e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(err);
}
