/** Bounded HTTP for the resolvers: every request has a deadline and every body a size cap. */
import { ResolutionError } from './failure';

export type FetchFn = typeof fetch;

export interface HttpLimits {
  /** Deadline of one request, body included. */
  requestTimeoutMs: number;
  /** Largest JSON body read (a listing page, revision info). */
  maxJsonBytes: number;
}

/** fetch with a deadline; a network failure or timeout becomes SourceUnavailable naming the URL (never a header). */
export async function boundedFetch(fetchFn: FetchFn, url: string, init: RequestInit, limits: HttpLimits, what: string): Promise<Response> {
  try {
    return await fetchFn(url, { ...init, signal: AbortSignal.timeout(limits.requestTimeoutMs) });
  } catch (err) {
    throw new ResolutionError('SourceUnavailable', `${what}: ${url} did not answer (${describeNetworkError(err, limits)}); it is retried`);
  }
}

export function describeNetworkError(err: unknown, limits: HttpLimits): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `no answer within ${limits.requestTimeoutMs} ms`;
  return e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(err);
}

/** Read a body of at most `maxBytes`, or fail with SourceUnavailable. */
export async function readCapped(res: Response, maxBytes: number, url: string, limits: HttpLimits): Promise<Buffer> {
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await res.body?.cancel();
    throw new ResolutionError('SourceUnavailable', `${url} answered ${declared} bytes, over the ${maxBytes}-byte limit for this response`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  if (!res.body) return Buffer.alloc(0);
  const reader = res.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.length;
      if (size > maxBytes) {
        await reader.cancel();
        throw new ResolutionError('SourceUnavailable', `${url} answered more than the ${maxBytes}-byte limit for this response`);
      }
      chunks.push(Buffer.from(value));
    }
  } catch (err) {
    if (err instanceof ResolutionError) throw err;
    throw new ResolutionError('SourceUnavailable', `${url} broke off its answer (${describeNetworkError(err, limits)}); it is retried`);
  }
  return Buffer.concat(chunks);
}

export async function readJson(res: Response, url: string, limits: HttpLimits): Promise<unknown> {
  const body = await readCapped(res, limits.maxJsonBytes, url, limits);
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new ResolutionError('SourceUnavailable', `${url} answered ${res.status} with a body that is not JSON; is the endpoint a hub?`);
  }
}

export function bearer(token: string | undefined): Record<string, string> {
  return token ? { Authorization: `Bearer ${token}` } : {};
}
