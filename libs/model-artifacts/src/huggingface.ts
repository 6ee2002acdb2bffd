/**
 * Resolution against the Hugging Face hub API: the revision is pinned with
 * `GET /api/models/{repo}/revision/{rev}` (its `sha`), the files come from the paged tree
 * `GET /api/models/{repo}/tree/{commit}?recursive=true` (following `Link: <…>; rel="next"`),
 * whose entries carry the LFS SHA-256 (`lfs.oid`) or, for files kept in git, the blob id (`oid`).
 */
import { ResolutionError } from './failure';
import { bearer, boundedFetch, readJson } from './http';
import { encodePath, ResolvedFile, SourceContext, SourceListing } from './resolution';

interface HubSource {
  repo: string;
  endpoint: string;
}

interface TreeEntry {
  type?: unknown;
  path?: unknown;
  size?: unknown;
  oid?: unknown;
  lfs?: { oid?: unknown; size?: unknown } | null;
}

export async function resolveHuggingFace(source: HubSource, revision: string, ctx: SourceContext): Promise<SourceListing> {
  const headers = { Accept: 'application/json', ...bearer(ctx.token) };
  // only the commit and the gated flag: a hub that ignores `expand` sends the full info, which has both
  const infoUrl = `${source.endpoint}/api/models/${source.repo}/revision/${encodeURIComponent(revision)}?expand=sha&expand=gated`;
  const infoRes = await boundedFetch(ctx.fetch, infoUrl, { headers }, ctx.limits, `revision info of ${source.repo}`);
  if (!infoRes.ok) throw await hubFailure(infoRes, infoUrl, source, revision, ctx);
  const info = (await readJson(infoRes, infoUrl, ctx.limits)) as { sha?: unknown; gated?: unknown };
  if (typeof info?.sha !== 'string' || !/^[0-9a-f]{40}$/.test(info.sha)) {
    throw new ResolutionError('SourceUnavailable', `${infoUrl} gave no commit id ("sha") for revision "${revision}"; is ${source.endpoint} a Hugging Face hub?`);
  }
  const commit = info.sha;

  const files: ResolvedFile[] = [];
  const masked: string[] = [];
  let listed = 0;
  let url: string | undefined = `${source.endpoint}/api/models/${source.repo}/tree/${commit}?recursive=true&expand=false`;
  const origin = new URL(source.endpoint).origin;
  for (let page = 1; url; page++) {
    if (page > ctx.limits.maxTreePages) throw new ResolutionError('SourceUnavailable', `the tree of ${source.repo} at ${commit} runs past ${ctx.limits.maxTreePages} pages; raise the page limit or narrow nothing: the listing is refused rather than cut short`);
    const res = await boundedFetch(ctx.fetch, url, { headers }, ctx.limits, `tree of ${source.repo}`);
    if (!res.ok) throw await hubFailure(res, url, source, revision, ctx);
    const entries = await readJson(res, url, ctx.limits);
    if (!Array.isArray(entries)) throw new ResolutionError('SourceUnavailable', `${url} did not answer a list of tree entries`);
    for (const entry of entries as TreeEntry[]) {
      if (entry?.type !== 'file') continue;
      if (typeof entry.path !== 'string') throw new ResolutionError('SourceUnavailable', `${url} lists a file without a path`);
      if (++listed > ctx.limits.maxFiles) throw new ResolutionError('SourceUnavailable', `${source.repo} lists more than ${ctx.limits.maxFiles} files`);
      if (!ctx.selected(entry.path)) continue;
      const digest = digestOf(entry);
      if (!digest) {
        masked.push(entry.path);
        continue;
      }
      files.push({
        path: entry.path,
        size: digest.size,
        digest: digest.digest,
        download: { url: `${source.endpoint}/${source.repo}/resolve/${commit}/${encodePath(entry.path)}`, headers: {}, bearerToken: ctx.token !== undefined },
      });
    }
    url = nextLink(res.headers.get('link'));
    // the token goes with every page: never follow a cursor to another host
    if (url && new URL(url).origin !== origin) throw new ResolutionError('SourceUnavailable', `the tree listing of ${source.repo} points its next page at another host (${new URL(url).origin}); refused`);
  }
  if (masked.length > 0) {
    throw new ResolutionError('AccessDenied', `${source.repo} masks the digests of ${masked.length} file(s) (e.g. ${masked[0]}): it is gated and ${accessHolder(ctx)} has not been granted access; accept its conditions on the repository page with the token's account`);
  }
  if (info.gated !== undefined && info.gated !== false && files.length > 0) await probeGatedAccess(source, files[0], revision, ctx);
  return { commit, files, listed };
}

function digestOf(entry: TreeEntry): { digest: string; size: number } | undefined {
  const lfs = entry.lfs;
  if (lfs && typeof lfs.oid === 'string' && /^[0-9a-f]{64}$/.test(lfs.oid)) {
    const size = typeof lfs.size === 'number' ? lfs.size : entry.size;
    if (typeof size === 'number') return { digest: `sha256:${lfs.oid}`, size };
  }
  if (!lfs && typeof entry.oid === 'string' && /^[0-9a-f]{40}$/.test(entry.oid) && typeof entry.size === 'number') return { digest: `gitsha1:${entry.oid}`, size: entry.size };
  return undefined;
}

/** A gated repository lists its files to anyone; only a request for the bytes tells whether the token may download them. */
async function probeGatedAccess(source: HubSource, file: ResolvedFile, revision: string, ctx: SourceContext): Promise<void> {
  const res = await boundedFetch(ctx.fetch, file.download.url, { method: 'HEAD', redirect: 'manual', headers: bearer(ctx.token) }, ctx.limits, `access check of ${source.repo}`);
  if (res.status >= 400) throw await hubFailure(res, file.download.url, source, revision, ctx);
  await res.body?.cancel();
}

function nextLink(header: string | null): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(',')) {
    const m = /^\s*<([^>]+)>\s*;\s*rel="?next"?\s*$/.exec(part);
    if (m) return m[1];
  }
  return undefined;
}

function accessHolder(ctx: SourceContext): string {
  return ctx.tokenName ? `the token in ${ctx.tokenName}` : 'an anonymous caller (no tokenFromSecret)';
}

/** The failure a hub error response means, from its status, X-Error-Code and X-Error-Message. */
export async function hubFailure(res: Response, url: string, source: HubSource, revision: string, ctx: SourceContext): Promise<ResolutionError> {
  const code = res.headers.get('x-error-code');
  let message = res.headers.get('x-error-message') ?? '';
  if (!message && res.headers.get('content-type')?.includes('json')) {
    try {
      const body = (await res.json()) as { error?: unknown };
      if (typeof body?.error === 'string') message = body.error.slice(0, 300);
    } catch {
      // the status alone will do
    }
  } else {
    await res.body?.cancel().catch(() => undefined);
  }
  const said = message ? ` ("${message}")` : '';
  if (code === 'RevisionNotFound') return new ResolutionError('RevisionNotFound', `${source.repo} has no revision "${revision}" at ${source.endpoint}${said}; name an existing branch, tag or commit`);
  if (code === 'GatedRepo') return new ResolutionError('AccessDenied', `${source.repo} is gated and ${accessHolder(ctx)} has not been granted access${said}; accept its conditions on the repository page with the token's account`);
  if (res.status === 401 && ctx.token && code !== 'RepoNotFound') {
    return new ResolutionError('InvalidToken', `${source.endpoint} refused the token in ${ctx.tokenName}${said}; put a valid token in that secret`);
  }
  if (code === 'RepoNotFound' || res.status === 401 || res.status === 403) {
    const who = ctx.token ? `the token in ${ctx.tokenName} cannot read it` : 'no token was given (set tokenFromSecret)';
    return new ResolutionError('AccessDenied', `${source.repo} does not exist at ${source.endpoint}, or it is private and ${who}${said}`);
  }
  if (res.status === 404) return new ResolutionError('SourceUnavailable', `${url} answered 404 without a hub error code${said}; is ${source.endpoint} a Hugging Face hub endpoint?`);
  return new ResolutionError('SourceUnavailable', `${url} answered ${res.status}${said}; it is retried`);
}
