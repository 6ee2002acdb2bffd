/**
 * Resolution against ModelScope: `GET {endpoint}/api/v1/models/{repo}/repo/files?Revision=&Recursive=true`
 * answers `{ Code: 200, Data: { Files: [{ Path, Type, Size, Sha256, Revision }] } }` (one response,
 * not paged); a file downloads from `{endpoint}/api/v1/models/{repo}/repo?Revision=&FilePath=`.
 * ModelScope gives every file's SHA-256, so every manifest line is `sha256:`.
 */
import { ResolutionError } from './failure';
import { bearer, boundedFetch, readJson } from './http';
import { ResolvedFile, SourceContext, SourceListing } from './resolution';

interface ModelScopeFile {
  Path?: unknown;
  Type?: unknown;
  Size?: unknown;
  Sha256?: unknown;
  Revision?: unknown;
}

export async function resolveModelScope(source: { repo: string; endpoint: string }, revision: string, ctx: SourceContext): Promise<SourceListing> {
  const url = `${source.endpoint}/api/v1/models/${source.repo}/repo/files?Revision=${encodeURIComponent(revision)}&Recursive=true`;
  const res = await boundedFetch(ctx.fetch, url, { headers: { Accept: 'application/json', ...bearer(ctx.token) } }, ctx.limits, `file list of ${source.repo}`);
  if (res.status === 401 || res.status === 403) {
    await res.body?.cancel();
    if (ctx.token) throw new ResolutionError('InvalidToken', `ModelScope at ${source.endpoint} refused the token in ${ctx.tokenName} (${res.status}); put a valid token in that secret`);
    throw new ResolutionError('AccessDenied', `${source.repo} on ModelScope needs a token (${res.status}); set tokenFromSecret`);
  }
  if (res.status === 404) {
    await res.body?.cancel();
    throw new ResolutionError('RevisionNotFound', `ModelScope at ${source.endpoint} has no revision "${revision}" of ${source.repo} (or no such model, or it is private to another account)`);
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new ResolutionError('SourceUnavailable', `${url} answered ${res.status}; it is retried`);
  }
  const body = (await readJson(res, url, ctx.limits)) as { Code?: unknown; Message?: unknown; Data?: { Files?: unknown } };
  if (body?.Code !== 200 || !Array.isArray(body.Data?.Files)) {
    throw new ResolutionError('SourceUnavailable', `${url} answered Code ${JSON.stringify(body?.Code)}${typeof body?.Message === 'string' ? ` ("${body.Message.slice(0, 200)}")` : ''} without a file list`);
  }
  const files: ResolvedFile[] = [];
  const revisions = new Set<string>();
  let listed = 0;
  for (const f of body.Data.Files as ModelScopeFile[]) {
    if (f?.Type !== 'blob') continue;
    if (typeof f.Path !== 'string' || typeof f.Size !== 'number') throw new ResolutionError('SourceUnavailable', `${url} lists a file without a Path or Size`);
    if (++listed > ctx.limits.maxFiles) throw new ResolutionError('SourceUnavailable', `${source.repo} lists more than ${ctx.limits.maxFiles} files`);
    if (typeof f.Revision === 'string') revisions.add(f.Revision);
    if (!ctx.selected(f.Path)) continue;
    if (typeof f.Sha256 !== 'string' || !/^[0-9a-f]{64}$/i.test(f.Sha256)) throw new ResolutionError('SourceUnavailable', `ModelScope gives no Sha256 for ${f.Path} of ${source.repo}, so it cannot be verified`);
    files.push({ path: f.Path, size: f.Size, digest: `sha256:${f.Sha256.toLowerCase()}`, download: { url: '', headers: {}, bearerToken: ctx.token !== undefined } });
  }
  // every file reports the commit it was listed at; when they agree, downloads name that commit rather than a branch that may move
  const commit = revisions.size === 1 ? [...revisions][0] : /^[0-9a-f]{40}$/.test(revision) ? revision : undefined;
  for (const f of files) {
    f.download.url = `${source.endpoint}/api/v1/models/${source.repo}/repo?Revision=${encodeURIComponent(commit ?? revision)}&FilePath=${encodeURIComponent(f.path)}`;
  }
  return { commit, files, listed };
}
