/** Simulated repositories: commits as full file snapshots, branches and tags pointing at them. */
import { createHash } from 'node:crypto';
import { ContentSource, FileContent, gitBlobSha1Of, HashCache, lfsPointer } from './content';

export interface HubFileSpec {
  /** Path inside the repository, `/`-separated, e.g. `model-00001-of-00002.safetensors`. */
  path: string;
  content: FileContent;
  /** Stored in LFS (served through the CDN redirect, hashed by SHA-256). Default: weight-like extensions and files of 1 MiB or more. */
  lfs?: boolean;
}

export interface HubCommitSpec {
  title?: string;
  /** Every file of the repository at this commit (a snapshot, not a diff). */
  files: HubFileSpec[];
}

export type GatedMode = false | 'auto' | 'manual';

export interface HubRepoSpec {
  /** `org/name` (a single-segment id like `gpt2` works too). */
  id: string;
  private?: boolean;
  /** A gated repository serves its listing to anyone, masks the files' digests and refuses their bytes without a granted token. */
  gated?: GatedMode;
  /** What a gated repository lists to a caller without a grant: `masked` (default) leaves the digests out, `listed` shows them and refuses only the bytes. */
  gatedDigests?: 'masked' | 'listed';
  /** Oldest first; at least one. */
  commits: HubCommitSpec[];
  /** Branch name to commit index. Default `{ main: <last commit> }`. */
  branches?: Record<string, number>;
  /** Tag name to commit index. */
  tags?: Record<string, number>;
}

const LFS_EXTENSIONS = /\.(safetensors|bin|gguf|pt|pth|ckpt|h5|onnx|msgpack|npz|pkl|tar|zip|gz)$/i;
const LFS_MIN_SIZE = 1024 * 1024;
const EPOCH = Date.parse('2026-01-01T00:00:00Z');

export interface RepoFile {
  path: string;
  source: ContentSource;
  lfs: boolean;
  /** The commit that last changed this file, up to the commit it is read at. */
  lastCommit: Commit;
}

export interface Commit {
  id: string;
  title: string;
  date: string;
  files: Map<string, RepoFile>;
}

/** What the tree API reports of one file; `oid`/`lfs` are absent when a gated repository masks them. */
export interface FileInfo {
  path: string;
  size: number;
  oid: string;
  lfs?: { oid: string; size: number; pointerSize: number };
}

export class HubRepo {
  readonly id: string;
  private: boolean;
  gated: GatedMode;
  gatedDigests: 'masked' | 'listed';
  readonly commits: Commit[] = [];
  readonly branches = new Map<string, string>();
  readonly tags = new Map<string, string>();
  readonly createdAt = new Date(EPOCH).toISOString();
  /** 24 hex digits, as the hub's `_id`. */
  readonly objectId: string;

  constructor(spec: HubRepoSpec) {
    if (!/^[\w.-]+(\/[\w.-]+)?$/.test(spec.id)) throw new Error(`hub simulator: repository id must be "org/name", got "${spec.id}"`);
    if (spec.commits.length === 0) throw new Error(`hub simulator: repository ${spec.id} needs at least one commit`);
    this.id = spec.id;
    this.private = spec.private ?? false;
    this.gated = spec.gated ?? false;
    this.gatedDigests = spec.gatedDigests ?? 'masked';
    this.objectId = createHash('sha1').update(`repo:${spec.id}`).digest('hex').slice(0, 24);
    for (const commit of spec.commits) this.addCommit(commit);
    const last = this.commits.length - 1;
    for (const [name, index] of Object.entries(spec.branches ?? { main: last })) this.branches.set(name, this.commitAt(index).id);
    if (!this.branches.has('main')) this.branches.set('main', this.commits[last].id);
    for (const [name, index] of Object.entries(spec.tags ?? {})) this.tags.set(name, this.commitAt(index).id);
  }

  private commitAt(index: number): Commit {
    const commit = this.commits[index];
    if (!commit) throw new Error(`hub simulator: repository ${this.id} has no commit #${index}`);
    return commit;
  }

  /** Append a commit (a full snapshot) and move `branch` to it; returns its id. */
  addCommit(spec: HubCommitSpec, branch?: string): string {
    const parent = this.commits[this.commits.length - 1];
    const index = this.commits.length;
    const title = spec.title ?? (index === 0 ? 'initial commit' : `commit ${index}`);
    const seen = new Set<string>();
    const built: { path: string; source: ContentSource; lfs: boolean }[] = [];
    for (const f of spec.files) {
      validatePath(this.id, f.path);
      if (seen.has(f.path)) throw new Error(`hub simulator: repository ${this.id} lists ${f.path} twice in one commit`);
      seen.add(f.path);
      const source = new ContentSource(f.content);
      built.push({ path: f.path, source, lfs: f.lfs ?? (LFS_EXTENSIONS.test(f.path) || source.size >= LFS_MIN_SIZE) });
    }
    const idHash = createHash('sha1').update(`${this.id}\n${parent?.id ?? ''}\n${title}\n`);
    for (const f of [...built].sort((a, b) => (a.path < b.path ? -1 : 1))) idHash.update(`${f.path}\0${f.lfs}\0${f.source.identity}\n`);
    const commit: Commit = { id: idHash.digest('hex'), title, date: new Date(EPOCH + index * 60_000).toISOString(), files: new Map() };
    for (const f of built) {
      const before = parent?.files.get(f.path);
      const unchanged = before && before.source.identity === f.source.identity && before.lfs === f.lfs;
      commit.files.set(f.path, { ...f, lastCommit: unchanged ? before.lastCommit : commit });
    }
    this.commits.push(commit);
    if (branch) this.branches.set(branch, commit.id);
    return commit.id;
  }

  /** A branch, a tag, a full commit id, or `HEAD` (the main branch). */
  resolveRevision(revision: string): Commit | undefined {
    const id =
      revision === 'HEAD'
        ? this.branches.get('main')
        : (this.branches.get(revision) ?? this.tags.get(revision) ?? (/^[0-9a-f]{40}$/.test(revision) ? revision : undefined));
    return id ? this.commits.find((c) => c.id === id) : undefined;
  }

  lastModified(): string {
    const main = this.resolveRevision('HEAD');
    return (main ?? this.commits[this.commits.length - 1]).date;
  }
}

function validatePath(repo: string, path: string): void {
  if (path === '' || path.startsWith('/') || path.split('/').some((s) => s === '' || s === '.' || s === '..')) {
    throw new Error(`hub simulator: repository ${repo} has an invalid file path "${path}"`);
  }
}

export async function fileInfo(file: RepoFile, hashes: HashCache): Promise<FileInfo> {
  if (!file.lfs) return { path: file.path, size: file.source.size, oid: await file.source.gitBlobSha1(hashes) };
  const sha256 = await file.source.sha256(hashes);
  const pointer = lfsPointer(sha256, file.source.size);
  return { path: file.path, size: file.source.size, oid: gitBlobSha1Of(pointer), lfs: { oid: sha256, size: file.source.size, pointerSize: pointer.length } };
}

/** Directories implied by the file paths of a commit, each once. */
export function directoriesOf(commit: Commit): string[] {
  const dirs = new Set<string>();
  for (const path of commit.files.keys()) {
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
  }
  return [...dirs];
}

export function directoryOid(commit: Commit, path: string): string {
  return createHash('sha1').update(`tree:${commit.id}:${path}`).digest('hex');
}
