/** A single file over HTTP(S): its digest is given, or computed by streaming it through once. */
import { createHash } from 'node:crypto';
import { ResolutionError } from './failure';
import { bearer, boundedFetch, describeNetworkError } from './http';
import { SourceContext, SourceListing } from './resolution';

export async function resolveUrl(source: { url: string; digest?: string; size?: number; fileName?: string }, ctx: SourceContext): Promise<SourceListing> {
  const path = source.fileName ?? fileNameOf(source.url);
  const download = { url: source.url, headers: {}, bearerToken: ctx.token !== undefined };
  if (source.digest && source.size !== undefined) return { files: [{ path, size: source.size, digest: source.digest, download }], listed: 1 };
  if (source.digest) {
    const res = await boundedFetch(ctx.fetch, source.url, { method: 'HEAD', headers: bearer(ctx.token) }, ctx.limits, 'size of the file');
    await res.body?.cancel();
    failOnStatus(res, source.url, ctx);
    const size = Number(res.headers.get('content-length'));
    if (!Number.isSafeInteger(size) || size < 0 || res.headers.get('content-length') === null) {
      throw new ResolutionError('SourceUnavailable', `${source.url} gives no Content-Length to HEAD; give source.size in the spec`);
    }
    return { files: [{ path, size, digest: source.digest, download }], listed: 1 };
  }
  return { files: [{ path, ...(await streamDigest(source.url, source.size, ctx)), download }], listed: 1 };
}

async function streamDigest(url: string, expectedSize: number | undefined, ctx: SourceContext): Promise<{ size: number; digest: string }> {
  const abort = new AbortController();
  let idle = setTimeout(() => abort.abort(), ctx.limits.requestTimeoutMs);
  const touch = (): void => {
    clearTimeout(idle);
    idle = setTimeout(() => abort.abort(), ctx.limits.idleTimeoutMs);
  };
  try {
    let res: Response;
    try {
      res = await ctx.fetch(url, { headers: bearer(ctx.token), signal: abort.signal });
    } catch (err) {
      throw new ResolutionError('SourceUnavailable', `${url} did not answer (${describeNetworkError(err, ctx.limits)}); it is retried`);
    }
    if (!res.ok) await res.body?.cancel();
    failOnStatus(res, url, ctx);
    const declared = res.headers.get('content-length') === null ? undefined : Number(res.headers.get('content-length'));
    if (declared !== undefined && declared > ctx.limits.maxUrlBytes) {
      await res.body?.cancel();
      throw new ResolutionError('SourceUnavailable', `${url} is ${declared} bytes, over the ${ctx.limits.maxUrlBytes}-byte limit for hashing a file without source.digest`);
    }
    const hash = createHash('sha256');
    let size = 0;
    const reader = res.body?.getReader();
    try {
      for (;;) {
        touch();
        const chunk = reader ? await reader.read() : { done: true as const, value: undefined };
        if (chunk.done) break;
        size += chunk.value.length;
        if (size > ctx.limits.maxUrlBytes) {
          await reader?.cancel();
          throw new ResolutionError('SourceUnavailable', `${url} sent more than the ${ctx.limits.maxUrlBytes}-byte limit for hashing a file without source.digest`);
        }
        hash.update(chunk.value);
      }
    } catch (err) {
      if (err instanceof ResolutionError) throw err;
      throw new ResolutionError('SourceUnavailable', `${url} broke off after ${size} bytes (${abort.signal.aborted ? `nothing for ${ctx.limits.idleTimeoutMs} ms` : describeNetworkError(err, ctx.limits)}); it is retried`);
    }
    if (declared !== undefined && declared !== size) throw new ResolutionError('SourceUnavailable', `${url} declared ${declared} bytes and sent ${size}; it is retried`);
    if (expectedSize !== undefined && expectedSize !== size) throw new ResolutionError('SourceUnavailable', `${url} sent ${size} bytes, the spec's source.size says ${expectedSize}`);
    return { size, digest: `sha256:${hash.digest('hex')}` };
  } finally {
    clearTimeout(idle);
  }
}

function failOnStatus(res: Response, url: string, ctx: SourceContext): void {
  if (res.ok) return;
  if (res.status === 401 && ctx.token) throw new ResolutionError('InvalidToken', `${url} refused the token in ${ctx.tokenName} (401); put a valid token in that secret`);
  if (res.status === 401 || res.status === 403) throw new ResolutionError('AccessDenied', `${url} answered ${res.status}${ctx.token ? `: the token in ${ctx.tokenName} may not read it` : '; set tokenFromSecret if it needs a token'}`);
  throw new ResolutionError('SourceUnavailable', `${url} answered ${res.status}; it is retried`);
}

function fileNameOf(url: string): string {
  const last = new URL(url).pathname.split('/').filter((s) => s !== '').pop();
  let name = 'download';
  try {
    if (last) name = decodeURIComponent(last);
  } catch {
    // keep the fallback name
  }
  return name === '.' || name === '..' || name.includes('/') ? 'download' : name;
}
