/**
 * A Hugging Face hub on a loopback HTTP socket: the subset of the hub API model downloads use
 * (revision info, the paged tree, paths-info, resolve with its CDN redirect, Range, the error
 * headers, bearer tokens), plus ModelScope's file listing for the same repositories. What it
 * leaves out: docs/hub-simulator.md. It never advertises Xet, so clients use plain HTTP ranges.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { HashCache } from './content';
import { HubFault, HubFaults, HubStats } from './faults';
import { Commit, directoriesOf, directoryOid, fileInfo, GatedMode, HubCommitSpec, HubRepo, HubRepoSpec, RepoFile } from './repos';

export interface HubSimulatorOptions {
  repos?: HubRepoSpec[];
  /** Accepted bearer tokens (they must start with `hf_`, as clients check) and the private or gated repositories each may read (`*`: all). */
  tokens?: Record<string, { canRead?: string[] }>;
  /** Tree entries per page. Default 1000, the hub's. */
  treePageSize?: number;
  /** Tree entries per page with `expand=true`. Default 50. */
  expandedTreePageSize?: number;
  /** Where hashes of generated content are kept across processes; `null`: memory only. Default: a directory under the OS temp dir. */
  hashCacheDir?: string | null;
  /** Lifetime of a signed CDN URL. Default 3600 s. */
  cdnUrlTtlSeconds?: number;
}

export interface HubSimulator {
  /** `http://127.0.0.1:<port>`: the `hubUrl` / `HF_ENDPOINT`. */
  readonly url: string;
  readonly faults: HubFaults;
  readonly stats: HubStats;
  repo(id: string): HubRepo;
  addRepo(spec: HubRepoSpec): HubRepo;
  /** Push a full snapshot onto `branch` (default main); returns the new commit id. */
  pushCommit(repo: string, commit: HubCommitSpec, branch?: string): string;
  setGated(repo: string, gated: GatedMode): void;
  /** Let `token` read a private or gated repository (the token is created if unknown). */
  grant(token: string, repo: string): void;
  /** Shorthand for `faults.set`. */
  setFault(repo: string, path: string | undefined, fault: HubFault | undefined): void;
  /** SHA-256 and git blob id of a file as served at a revision. */
  hashesOf(repo: string, revision: string, path: string): Promise<{ sha256: string; gitSha1: string; size: number }>;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 1024 * 1024;
/** bytes of a file gathered (corked) before they go to the socket together */
const SEND_BATCH_BYTES = 1024 * 1024;
const INVALID_CREDENTIALS = 'Invalid credentials in Authorization header';
const EXPANDABLE = new Set(['author', 'cardData', 'config', 'createdAt', 'disabled', 'downloads', 'gated', 'lastModified', 'library_name', 'likes', 'pipeline_tag', 'private', 'sha', 'siblings', 'tags', 'usedStorage']);

class HubError extends Error {
  constructor(
    readonly status: number,
    readonly code: string | undefined,
    message: string,
  ) {
    super(message);
  }
}

interface Caller {
  token?: string;
  canRead: Set<string>;
}

type Access = 'full' | 'masked';

/** Start a hub simulator on 127.0.0.1 and an ephemeral port. */
export async function startHubSimulator(options: HubSimulatorOptions = {}): Promise<HubSimulator> {
  const repos = new Map<string, HubRepo>();
  for (const spec of options.repos ?? []) repos.set(spec.id, new HubRepo(spec));
  const tokens = new Map<string, Set<string>>();
  for (const [token, grant] of Object.entries(options.tokens ?? {})) tokens.set(token, new Set(grant.canRead ?? []));
  const hashes = new HashCache(options.hashCacheDir === null ? undefined : (options.hashCacheDir ?? join(tmpdir(), 'gpufleet-hub-simulator-hashes')));
  const faults = new HubFaults();
  const stats = new HubStats();
  const secret = randomBytes(32);
  const pageSize = options.treePageSize ?? 1000;
  const expandedPageSize = options.expandedTreePageSize ?? 50;
  const cdnTtl = options.cdnUrlTtlSeconds ?? 3600;
  const sockets = new Set<Socket>();
  let base = '';

  const repoOf = (id: string): HubRepo => {
    const repo = repos.get(id);
    if (!repo) throw new Error(`hub simulator: no repository ${id}`);
    return repo;
  };

  function callerOf(req: IncomingMessage): Caller {
    const header = req.headers.authorization;
    if (!header) return { canRead: new Set() };
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    const grant = match ? tokens.get(match[1]) : undefined;
    if (!match || !grant) throw new HubError(401, undefined, INVALID_CREDENTIALS);
    return { token: match[1], canRead: grant };
  }

  /** Decide what a caller sees of a repository: everything, a listing without digests (gated), or an error. */
  async function access(repoId: string, caller: Caller, forContent: boolean): Promise<{ repo: HubRepo; access: Access }> {
    const repo = repos.get(repoId);
    const granted = caller.canRead.has('*') || caller.canRead.has(repoId);
    if (!repo || (repo.private && !granted)) {
      // the hub hides whether a private repository exists: anonymous callers get 401, others 404
      throw new HubError(caller.token ? 404 : 401, 'RepoNotFound', 'Repository not found');
    }
    const fault = faults.of(repoId);
    if (fault.latencyMs) await sleep(fault.latencyMs);
    if (fault.status) throw faultError(fault.status);
    if (repo.gated && !granted) {
      if (forContent) {
        throw new HubError(caller.token ? 403 : 401, 'GatedRepo', `Access to model ${repoId} is restricted and you are not in the authorized list. Visit the repository page to ask for access.`);
      }
      return { repo, access: repo.gatedDigests === 'masked' ? 'masked' : 'full' };
    }
    return { repo, access: 'full' };
  }

  function commitOf(repo: HubRepo, revision: string): Commit {
    const commit = repo.resolveRevision(revision);
    if (!commit) throw new HubError(404, 'RevisionNotFound', `Invalid rev id: ${revision}`);
    return commit;
  }

  async function treeEntry(commit: Commit, path: string, level: Access, expand: boolean): Promise<Record<string, unknown> | undefined> {
    const file = commit.files.get(path);
    if (file) {
      const info = await fileInfo(file, hashes);
      const entry: Record<string, unknown> = { type: 'file', size: info.size, path };
      if (level === 'full') {
        entry.oid = info.oid;
        if (info.lfs) entry.lfs = info.lfs;
      }
      if (expand) {
        entry.lastCommit = { id: file.lastCommit.id, title: file.lastCommit.title, date: file.lastCommit.date };
        entry.securityFileStatus = { status: 'safe' };
      }
      return entry;
    }
    if (directoriesOf(commit).includes(path)) {
      const entry: Record<string, unknown> = { type: 'directory', oid: directoryOid(commit, path), size: 0, path };
      if (expand) entry.lastCommit = { id: commit.id, title: commit.title, date: commit.date };
      return entry;
    }
    return undefined;
  }

  async function modelInfo(repo: HubRepo, commit: Commit, level: Access, query: URLSearchParams): Promise<Record<string, unknown>> {
    const blobs = truthy(query.get('blobs'));
    const siblings = [];
    let usedStorage = 0;
    for (const file of [...commit.files.values()].sort(byPath)) {
      const sibling: Record<string, unknown> = { rfilename: file.path };
      if (blobs) {
        const info = await fileInfo(file, hashes);
        sibling.size = info.size;
        if (level === 'full') {
          sibling.blobId = info.oid;
          if (info.lfs) sibling.lfs = { sha256: info.lfs.oid, size: info.lfs.size, pointerSize: info.lfs.pointerSize };
        }
      }
      usedStorage += file.source.size;
      siblings.push(sibling);
    }
    const full: Record<string, unknown> = {
      _id: repo.objectId,
      id: repo.id,
      modelId: repo.id,
      author: repo.id.includes('/') ? repo.id.split('/')[0] : undefined,
      sha: commit.id,
      lastModified: commit.date,
      createdAt: repo.createdAt,
      private: repo.private,
      gated: repo.gated,
      disabled: false,
      downloads: 0,
      likes: 0,
      tags: [],
      library_name: 'transformers',
      pipeline_tag: 'text-generation',
      siblings,
      usedStorage,
    };
    const expand = query.getAll('expand');
    if (expand.length === 0) return full;
    const picked: Record<string, unknown> = { _id: full._id, id: full.id };
    for (const key of expand) if (EXPANDABLE.has(key)) picked[key] = full[key];
    return picked;
  }

  async function handle(req: IncomingMessage, res: ServerResponse, record: { repo?: string; file?: string; range?: [number, number]; bytes: number }): Promise<void> {
    const url = new URL(req.url ?? '/', base);
    const segments = url.pathname.split('/').filter((s) => s !== '').map(decodeSegment);
    const method = req.method ?? 'GET';
    // the CDN authorizes by the signed URL alone and ignores an Authorization header, as S3 and CloudFront do
    if (segments[0] === 'cdn-lfs') return serveCdn(req, res, url, record);
    const caller = callerOf(req);

    if (segments[0] === 'api' && segments[1] === 'models') {
      const route = splitRepo(segments.slice(2), ['revision', 'tree', 'paths-info']);
      if (!route) throw new HubError(404, undefined, 'Not found');
      record.repo = route.repo;
      const { repo, access: level } = await access(route.repo, caller, false);
      if (route.verb === undefined && method === 'GET') return json(res, 200, await modelInfo(repo, commitOf(repo, 'main'), level, url.searchParams));
      if (route.verb === 'revision' && method === 'GET') {
        const revision = route.rest.join('/');
        return json(res, 200, await modelInfo(repo, commitOf(repo, revision), level, url.searchParams));
      }
      if (route.verb === 'tree' && method === 'GET') return serveTree(res, repo, level, route.rest, url);
      if (route.verb === 'paths-info' && method === 'POST') return servePathsInfo(req, res, repo, level, route.rest.join('/'));
      throw new HubError(405, undefined, `${method} is not supported here`);
    }

    if (segments[0] === 'api' && segments[1] === 'v1' && segments[2] === 'models') return serveModelScope(res, caller, segments.slice(3), url, method, record);

    const route = splitRepo(segments, ['resolve', 'raw']);
    if (route?.verb && (method === 'GET' || method === 'HEAD') && route.rest.length >= 2) {
      record.repo = route.repo;
      const [revision, ...pathParts] = route.rest;
      return serveResolve(req, res, caller, route.repo, revision, pathParts.join('/'), route.verb === 'raw', record);
    }
    throw new HubError(404, undefined, 'Not found');
  }

  /** `[org, name, verb, ...rest]` or `[name, verb, ...rest]`; a repository that exists wins. */
  function splitRepo(parts: string[], verbs: string[]): { repo: string; verb?: string; rest: string[] } | undefined {
    if (parts.length >= 2 && (parts.length === 2 || verbs.includes(parts[2])) && (repos.has(`${parts[0]}/${parts[1]}`) || !verbs.includes(parts[1]))) {
      return { repo: `${parts[0]}/${parts[1]}`, verb: parts[2], rest: parts.slice(3) };
    }
    if (parts.length >= 1 && (parts.length === 1 || verbs.includes(parts[1]))) return { repo: parts[0], verb: parts[1], rest: parts.slice(2) };
    return undefined;
  }

  async function serveTree(res: ServerResponse, repo: HubRepo, level: Access, rest: string[], url: URL): Promise<void> {
    const [revision, ...dirParts] = rest;
    if (!revision) throw new HubError(400, undefined, 'a revision is required: /tree/{revision}[/{path}]');
    const commit = commitOf(repo, revision);
    const dir = dirParts.join('/');
    const recursive = truthy(url.searchParams.get('recursive'));
    const expand = truthy(url.searchParams.get('expand'));
    const dirs = directoriesOf(commit);
    if (dir !== '' && !dirs.includes(dir)) throw new HubError(404, 'EntryNotFound', `${dir} does not exist on "${revision}"`);
    const prefix = dir === '' ? '' : `${dir}/`;
    const paths = [...dirs, ...commit.files.keys()]
      .filter((p) => p.startsWith(prefix) && (recursive || !p.slice(prefix.length).includes('/')))
      .sort();
    const limit = Math.min(expand ? expandedPageSize : pageSize, positiveInt(url.searchParams.get('limit')) ?? Infinity);
    const offset = decodeCursor(url.searchParams.get('cursor'));
    const page = paths.slice(offset, offset + limit);
    const entries = [];
    for (const p of page) entries.push(await treeEntry(commit, p, level, expand));
    if (offset + limit < paths.length) {
      const next = new URL(url.pathname, base);
      for (const [k, v] of url.searchParams) if (k !== 'cursor') next.searchParams.append(k, v);
      next.searchParams.set('cursor', Buffer.from(JSON.stringify({ offset: offset + limit }), 'utf8').toString('base64url'));
      res.setHeader('Link', `<${next.toString()}>; rel="next"`);
    }
    json(res, 200, entries);
  }

  async function servePathsInfo(req: IncomingMessage, res: ServerResponse, repo: HubRepo, level: Access, revision: string): Promise<void> {
    const commit = commitOf(repo, revision || 'main');
    const raw = await readBody(req);
    let paths: unknown;
    let expand: unknown;
    if ((req.headers['content-type'] ?? '').includes('application/json')) {
      let body: unknown;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        throw new HubError(400, undefined, 'the body is not valid JSON');
      }
      paths = (body as { paths?: unknown }).paths;
      expand = (body as { expand?: unknown }).expand;
    } else {
      const form = new URLSearchParams(raw.toString('utf8'));
      paths = form.getAll('paths');
      expand = truthy(form.get('expand'));
    }
    if (!Array.isArray(paths) || paths.some((p) => typeof p !== 'string')) throw new HubError(400, undefined, '"paths" must be an array of strings');
    const out = [];
    for (const p of new Set(paths as string[])) {
      const entry = await treeEntry(commit, p.replace(/^\/+|\/+$/g, ''), level, expand === true);
      if (entry) out.push(entry);
    }
    json(res, 200, out);
  }

  async function serveResolve(req: IncomingMessage, res: ServerResponse, caller: Caller, repoId: string, revision: string, path: string, raw: boolean, record: { file?: string; range?: [number, number]; bytes: number }): Promise<void> {
    record.file = path;
    const { repo } = await access(repoId, caller, true);
    const commit = commitOf(repo, revision);
    const file = commit.files.get(path);
    if (!file) throw new HubError(404, 'EntryNotFound', `Entry not found: ${path} at ${revision}`);
    const fileFault = faults.of(repoId, path);
    if (fileFault.latencyMs && !faults.of(repoId, undefined).latencyMs) await sleep(fileFault.latencyMs);
    if (fileFault.status) throw faultError(fileFault.status);
    const info = await fileInfo(file, hashes);
    res.setHeader('X-Repo-Commit', commit.id);
    res.setHeader('Accept-Ranges', 'bytes');
    if (file.lfs && info.lfs && !raw) {
      const expires = Math.floor(Date.now() / 1000) + cdnTtl;
      const cdn = new URL(`/cdn-lfs/${info.lfs.oid}`, base);
      cdn.searchParams.set('repo', repoId);
      cdn.searchParams.set('path', path);
      cdn.searchParams.set('expires', String(expires));
      cdn.searchParams.set('signature', sign(info.lfs.oid, repoId, path, expires));
      res.writeHead(302, {
        Location: cdn.toString(),
        ETag: `"${info.oid}"`,
        'X-Linked-Etag': `"${info.lfs.oid}"`,
        'X-Linked-Size': String(info.size),
        'Content-Length': '0',
      });
      res.end();
      return;
    }
    if (file.lfs && info.lfs) {
      // raw: the pointer file that git stores in place of the LFS object
      const pointer = Buffer.from(`version https://git-lfs.github.com/spec/v1\noid sha256:${info.lfs.oid}\nsize ${info.size}\n`);
      res.setHeader('ETag', `"${info.oid}"`);
      return sendBytes(req, res, pointer, 'text/plain; charset=utf-8');
    }
    res.setHeader('ETag', `"${info.oid}"`);
    return sendFile(req, res, repoId, file, contentTypeOf(path), record);
  }

  async function serveCdn(req: IncomingMessage, res: ServerResponse, url: URL, record: { repo?: string; file?: string; range?: [number, number]; bytes: number }): Promise<void> {
    const oid = url.pathname.split('/')[2] ?? '';
    const repoId = url.searchParams.get('repo') ?? '';
    const path = url.searchParams.get('path') ?? '';
    const expires = Number(url.searchParams.get('expires'));
    const signature = url.searchParams.get('signature') ?? '';
    const expected = sign(oid, repoId, path, expires);
    if (signature.length !== expected.length || !timingSafeEqual(Buffer.from(signature), Buffer.from(expected))) {
      throw new HubError(403, undefined, 'SignatureDoesNotMatch: the CDN URL is not one this hub signed');
    }
    if (!(expires * 1000 > Date.now())) throw new HubError(403, undefined, 'AccessDenied: the signed CDN URL expired; resolve the file again');
    record.repo = repoId;
    record.file = path;
    const latency = faults.of(repoId, path).latencyMs;
    if (latency) await sleep(latency);
    // the object the URL was signed for, even when a later commit changed the file at that path
    let file: RepoFile | undefined;
    for (const commit of [...repoOf(repoId).commits].reverse()) {
      const candidate = commit.files.get(path);
      if (candidate?.lfs && (await candidate.source.sha256(hashes)) === oid) {
        file = candidate;
        break;
      }
    }
    if (!file) throw new HubError(404, undefined, 'NoSuchKey');
    res.setHeader('ETag', `"${oid}"`);
    res.setHeader('Accept-Ranges', 'bytes');
    res.setHeader('Cache-Control', 'public, max-age=604800, immutable');
    return sendFile(req, res, repoId, file, 'application/octet-stream', record);
  }

  async function sendFile(req: IncomingMessage, res: ServerResponse, repoId: string, file: RepoFile, contentType: string, record: { range?: [number, number]; bytes: number }): Promise<void> {
    const size = file.source.size;
    // an empty file has no byte to send a range of: answer the whole (empty) body rather than 416, as clients probing with bytes=0-0 expect
    const range = size === 0 ? undefined : parseRange(req.headers.range, size);
    if (range === 'unsatisfiable') {
      res.writeHead(416, { 'Content-Range': `bytes */${size}`, 'Content-Type': 'text/plain' });
      res.end(req.method === 'HEAD' ? undefined : 'Requested Range Not Satisfiable');
      return;
    }
    const [start, end] = range ?? [0, size - 1];
    res.setHeader('Content-Type', contentType);
    res.setHeader('Content-Length', String(size === 0 ? 0 : end - start + 1));
    if (range) {
      res.statusCode = 206;
      res.setHeader('Content-Range', `bytes ${start}-${end}/${size}`);
      record.range = range;
    }
    res.flushHeaders();
    if (req.method === 'HEAD' || size === 0) {
      res.end();
      return;
    }
    stats.addRange(repoId, file.path, [start, end]);
    let offset = start;
    let sentHere = 0;
    // pieces are gathered (corked) and sent together, up to a bound, so small ones cost no syscall each
    let gathered = 0;
    res.cork();
    const send = async (): Promise<void> => {
      gathered = 0;
      res.uncork();
      if (res.writableNeedDrain) await drainOrClose(res);
      res.cork();
    };
    for await (const original of file.source.read(start, end + 1)) {
      for (let at = 0; at < original.length; ) {
        const fault = faults.of(repoId, file.path);
        const slice = Math.min(original.length - at, fault.bytesPerSecond ? Math.max(1, Math.min(64 * 1024, Math.ceil(fault.bytesPerSecond / 20))) : original.length);
        if (fault.stallAfterBytes !== undefined && sentHere >= fault.stallAfterBytes) {
          // a stall: headers sent, no more bytes, connection left open until the client gives up or the hub closes
          res.uncork();
          await once(res, 'close');
          return;
        }
        const allowed = fault.stallAfterBytes !== undefined ? Math.min(slice, fault.stallAfterBytes - sentHere) : slice;
        let chunk = original.subarray(at, at + allowed);
        if (fault.corrupt) chunk = corrupt(chunk, offset, fault.corrupt);
        if (res.destroyed) return;
        res.write(chunk);
        stats.addBytes(repoId, file.path, chunk.length);
        record.bytes += chunk.length;
        sentHere += chunk.length;
        offset += chunk.length;
        at += chunk.length;
        gathered += chunk.length;
        if (gathered >= SEND_BATCH_BYTES || fault.bytesPerSecond || fault.stallAfterBytes !== undefined) await send();
        if (fault.bytesPerSecond) await sleep(Math.ceil((chunk.length / fault.bytesPerSecond) * 1000));
      }
    }
    res.uncork();
    res.end();
  }

  function sendBytes(req: IncomingMessage, res: ServerResponse, bytes: Buffer, contentType: string): void {
    const range = parseRange(req.headers.range, bytes.length);
    if (range === 'unsatisfiable') {
      res.writeHead(416, { 'Content-Range': `bytes */${bytes.length}` });
      res.end();
      return;
    }
    const [start, end] = range ?? [0, bytes.length - 1];
    res.writeHead(range ? 206 : 200, {
      'Content-Type': contentType,
      'Content-Length': String(end - start + 1),
      ...(range ? { 'Content-Range': `bytes ${start}-${end}/${bytes.length}` } : {}),
    });
    res.end(req.method === 'HEAD' ? undefined : bytes.subarray(start, end + 1));
  }

  /** ModelScope's listing (`/api/v1/models/{id}/repo/files`) and download (`/api/v1/models/{id}/repo?FilePath=`) over the same repositories. */
  async function serveModelScope(res: ServerResponse, caller: Caller, parts: string[], url: URL, method: string, record: { repo?: string; file?: string; range?: [number, number]; bytes: number }): Promise<void> {
    if (parts.length < 3 || parts[2] !== 'repo' || method !== 'GET') throw new HubError(404, undefined, 'Not found');
    const repoId = `${parts[0]}/${parts[1]}`;
    record.repo = repoId;
    const revision = url.searchParams.get('Revision') ?? 'master';
    const repo = repos.get(repoId);
    const granted = caller.canRead.has('*') || caller.canRead.has(repoId);
    if (!repo || (repo.private && !granted)) return json(res, 404, { Code: 10010205001, Message: `model ${repoId} not found`, Success: false });
    const commit = repo.resolveRevision(revision === 'master' ? 'main' : revision);
    if (!commit) return json(res, 404, { Code: 10010205001, Message: `revision ${revision} not found`, Success: false });
    if (parts[3] === 'files') {
      const recursive = truthy(url.searchParams.get('Recursive'));
      const files = [];
      for (const file of [...commit.files.values()].sort(byPath)) {
        if (!recursive && file.path.includes('/')) continue;
        files.push({ Name: file.path.split('/').pop(), Path: file.path, Type: 'blob', Size: file.source.size, Sha256: await file.source.sha256(hashes), Revision: commit.id, IsLFS: file.lfs });
      }
      return json(res, 200, { Code: 200, Data: { Files: files }, Message: 'success', Success: true });
    }
    const path = url.searchParams.get('FilePath') ?? '';
    const file = commit.files.get(path);
    record.file = path;
    if (!file) return json(res, 404, { Code: 10010205001, Message: `file ${path} not found`, Success: false });
    return sendFile(res.req, res, repoId, file, contentTypeOf(path), record);
  }

  function sign(oid: string, repo: string, path: string, expires: number): string {
    return createHmac('sha256', secret).update(`${oid}\n${repo}\n${path}\n${expires}`).digest('base64url');
  }

  const server: Server = createServer((req, res) => {
    const record = { bytes: 0 } as { repo?: string; file?: string; range?: [number, number]; bytes: number };
    res.on('close', () => stats.record({ method: req.method ?? 'GET', url: req.url ?? '/', status: res.statusCode, repo: record.repo, file: record.file, range: record.range, bytes: record.bytes }));
    handle(req, res, record).catch((err: unknown) => {
      const e = err instanceof HubError ? err : new HubError(500, undefined, `hub simulator failed: ${(err as Error).message}`);
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const headers: Record<string, string> = { 'Content-Type': 'application/json; charset=utf-8', 'X-Error-Message': e.message };
      if (e.code) headers['X-Error-Code'] = e.code;
      res.writeHead(e.status, headers);
      res.end(req.method === 'HEAD' ? undefined : JSON.stringify({ error: e.message }));
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: base,
    faults,
    stats,
    repo: repoOf,
    addRepo(spec) {
      const repo = new HubRepo(spec);
      repos.set(spec.id, repo);
      return repo;
    },
    pushCommit: (repo, commit, branch = 'main') => repoOf(repo).addCommit(commit, branch),
    setGated(repo, gated) {
      repoOf(repo).gated = gated;
    },
    grant(token, repo) {
      const grant = tokens.get(token) ?? new Set<string>();
      grant.add(repo);
      tokens.set(token, grant);
    },
    setFault: (repo, path, fault) => faults.set(repo, path, fault),
    async hashesOf(repoId, revision, path) {
      const file = repoOf(repoId).resolveRevision(revision)?.files.get(path);
      if (!file) throw new Error(`hub simulator: ${repoId} has no ${path} at ${revision}`);
      return { sha256: await file.source.sha256(hashes), gitSha1: await file.source.gitBlobSha1(hashes), size: file.source.size };
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

/** Backpressure that also ends when the client leaves; both listeners are removed so long downloads do not pile them up. */
function drainOrClose(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

function faultError(status: number): HubError {
  const code = status === 404 ? 'EntryNotFound' : undefined;
  return new HubError(status, code, `simulated fault: status ${status}`);
}

function corrupt(chunk: Buffer, offset: number, range: { offset: number; length: number }): Buffer {
  const from = Math.max(offset, range.offset);
  const to = Math.min(offset + chunk.length, range.offset + range.length);
  if (from >= to) return chunk;
  const copy = Buffer.from(chunk);
  for (let i = from; i < to; i++) copy[i - offset] ^= 0xff;
  return copy;
}

/** One `bytes=` range (the only form download clients send); several ranges are answered with the whole file, as RFC 9110 allows. */
export function parseRange(header: string | undefined, size: number): [number, number] | 'unsatisfiable' | undefined {
  if (!header) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return [Math.max(0, size - suffix), size - 1];
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || (m[2] !== '' && Number(m[2]) < start)) return 'unsatisfiable';
  return [start, end];
}

function decodeCursor(cursor: string | null): number {
  if (!cursor) return 0;
  try {
    const offset = (JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { offset?: unknown }).offset;
    if (typeof offset === 'number' && Number.isSafeInteger(offset) && offset >= 0) return offset;
  } catch {
    // fall through to the refusal
  }
  throw new HubError(400, undefined, `invalid cursor "${cursor}"`);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HubError(413, undefined, `request body over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': String(Buffer.byteLength(text)) });
  res.end(res.req.method === 'HEAD' ? undefined : text);
}

function truthy(value: string | null): boolean {
  return value !== null && /^(true|1|yes)$/i.test(value);
}

function positiveInt(value: string | null): number | undefined {
  const n = Number(value);
  return value !== null && Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HubError(400, undefined, `malformed URL segment "${segment}"`);
  }
}

function byPath(a: RepoFile, b: RepoFile): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}

function contentTypeOf(path: string): string {
  if (path.endsWith('.json')) return 'application/json';
  if (/\.(md|txt|py|yaml|yml)$/.test(path)) return 'text/plain; charset=utf-8';
  return 'application/octet-stream';
}
