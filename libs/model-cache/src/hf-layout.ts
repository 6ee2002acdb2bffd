import { promises as fs } from 'fs';
import { dirname, join, relative } from 'path';
import { CacheLayout, exists, fsyncDir, removeTree, writeFileAtomic } from './layout';
import { type BlobDigest, InvalidManifestError } from './manifest';

/**
 * The Hugging Face cache view of a tree (huggingface_hub's layout, which `@huggingface/hub`'s
 * scanCacheDir and downloadFileToCacheDir read too):
 *   <HF_HUB_CACHE>/models--org--name/blobs/<etag>                 the bytes (sha256 for LFS files, git blob sha1 otherwise)
 *   <HF_HUB_CACHE>/models--org--name/snapshots/<commit>/<path>    relative symlink to ../../blobs/<etag>
 *   <HF_HUB_CACHE>/models--org--name/refs/<revision>              the commit, no newline
 */
export interface HfLayoutOptions {
  /** `org/name` (or `name`) */
  readonly repo: string;
  /** the 40-hex commit the revision resolved to */
  readonly commit: string;
  /** the revision asked for (`main`, a tag, `refs/pr/1`); its ref file points at the commit */
  readonly revision?: string;
  readonly type?: 'model' | 'dataset' | 'space';
}

const REPO = /^(?:[A-Za-z0-9][A-Za-z0-9._-]*\/)?[A-Za-z0-9][A-Za-z0-9._-]*$/;
const COMMIT = /^[0-9a-f]{40}$/;
const REVISION = /^[A-Za-z0-9._-]+(?:\/[A-Za-z0-9._-]+)*$/;

export function validateHfLayout(o: HfLayoutOptions): void {
  if (typeof o.repo !== 'string' || !REPO.test(o.repo) || o.repo.includes('--') || o.repo.split('/').some((p) => p === '.' || p === '..')) {
    throw new InvalidManifestError('hf.repo', `"org/name" of letters, digits, ".", "_", "-" (no "--"), got ${JSON.stringify(o.repo)}`);
  }
  if (typeof o.commit !== 'string' || !COMMIT.test(o.commit)) throw new InvalidManifestError('hf.commit', `a 40-hex commit id, got ${JSON.stringify(o.commit)}`);
  if (o.revision !== undefined && (!REVISION.test(o.revision) || o.revision.split('/').some((p) => p === '.' || p === '..'))) {
    throw new InvalidManifestError('hf.revision', `a branch, tag or refs/pr/N, got ${JSON.stringify(o.revision)}`);
  }
  if (o.type !== undefined && !['model', 'dataset', 'space'].includes(o.type)) {
    throw new InvalidManifestError('hf.type', `"model", "dataset" or "space", got ${JSON.stringify(o.type)}`);
  }
}

export function hfRepoFolder(o: HfLayoutOptions): string {
  return [`${o.type ?? 'model'}s`, ...o.repo.split('/')].join('--');
}

export interface HfFile {
  readonly path: string;
  readonly digest: BlobDigest;
}

/** Publishes a snapshot so that every link in it resolves the moment it appears; returns the snapshot directory. */
export async function publishHfSnapshot(layout: CacheLayout, o: HfLayoutOptions, files: readonly HfFile[]): Promise<string> {
  const repoDir = join(layout.hfCacheDir, hfRepoFolder(o));
  const blobsDir = join(repoDir, 'blobs');
  for (const d of [blobsDir, join(repoDir, 'snapshots'), join(repoDir, 'refs'), join(repoDir, '.staging')]) await fs.mkdir(d, { recursive: true });
  for (const f of files) {
    // a second name for the verified blob: no copy, and the bytes stay until the last name goes
    await fs.link(layout.blob(f.digest), join(blobsDir, f.digest.hex)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
  }
  const snapshot = join(repoDir, 'snapshots', o.commit);
  if (!(await exists(snapshot))) {
    // staged two levels under the repo folder, as the snapshot is, so the relative links are the same
    const staging = join(repoDir, '.staging', `${o.commit}-${process.pid}-${Date.now()}`);
    await removeTree(staging);
    await fs.mkdir(staging, { recursive: true });
    for (const f of files) await linkInto(staging, snapshot, f, blobsDir);
    await sealDirs(staging, false);
    await fs.rename(staging, snapshot).catch(async (err: NodeJS.ErrnoException) => {
      await removeTree(staging);
      if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err;
    });
    await fs.chmod(snapshot, 0o555);
    await fsyncDir(join(repoDir, 'snapshots'));
  }
  // another manifest of the same commit (other allow patterns) may have published fewer files
  for (const f of files) {
    const at = join(snapshot, f.path);
    if (await exists(at)) continue;
    await unsealed(snapshot, dirname(at), async () => {
      await fs.mkdir(dirname(at), { recursive: true });
      const tmp = `${at}.${process.pid}.tmp`;
      await fs.rm(tmp, { force: true });
      await fs.symlink(relative(dirname(at), join(blobsDir, f.digest.hex)), tmp);
      await fs.rename(tmp, at);
    });
  }
  if (o.revision && o.revision !== o.commit) {
    const ref = join(repoDir, 'refs', o.revision);
    await fs.mkdir(dirname(ref), { recursive: true });
    await writeFileAtomic(ref, o.commit);
  }
  return snapshot;
}

/**
 * Takes a tree's files out of the HF view. `stillWanted` are the files other trees publish for
 * the same repository: links (same commit) and blobs (any commit) they need stay.
 */
export async function removeHfSnapshot(layout: CacheLayout, o: HfLayoutOptions, files: readonly HfFile[], stillWanted: ReadonlyArray<{ commit: string; file: HfFile }>): Promise<void> {
  const repoDir = join(layout.hfCacheDir, hfRepoFolder(o));
  const snapshot = join(repoDir, 'snapshots', o.commit);
  const sameCommit = stillWanted.filter((w) => w.commit === o.commit);
  if (sameCommit.length === 0) {
    await removeTree(snapshot);
    const refs = join(repoDir, 'refs');
    for (const ref of await listFiles(refs)) {
      if ((await fs.readFile(ref, 'utf8').catch(() => '')) === o.commit) await fs.rm(ref, { force: true });
    }
  } else {
    const keep = new Set(sameCommit.map((w) => w.file.path));
    for (const f of files) {
      if (keep.has(f.path)) continue;
      const at = join(snapshot, f.path);
      await unsealed(snapshot, dirname(at), () => fs.rm(at, { force: true }));
    }
  }
  const keepBlobs = new Set(stillWanted.map((w) => w.file.digest.hex));
  for (const f of files) if (!keepBlobs.has(f.digest.hex)) await fs.rm(join(repoDir, 'blobs', f.digest.hex), { force: true });
  if (stillWanted.length === 0) await removeTree(repoDir);
}

async function linkInto(staging: string, finalSnapshot: string, f: HfFile, blobsDir: string): Promise<void> {
  const staged = join(staging, f.path);
  await fs.mkdir(dirname(staged), { recursive: true });
  await fs.symlink(relative(dirname(join(finalSnapshot, f.path)), join(blobsDir, f.digest.hex)), staged);
}

/** Makes directories 0555 bottom-up; the top one too when `top`. */
async function sealDirs(dir: string, top: boolean): Promise<void> {
  for (const e of await fs.readdir(dir, { withFileTypes: true })) if (e.isDirectory()) await sealDirs(join(dir, e.name), true);
  if (top) await fs.chmod(dir, 0o555);
}

/** Runs `fn` with the directories from `top` down to `dir` writable, and seals them again. */
async function unsealed(top: string, dir: string, fn: () => Promise<void>): Promise<void> {
  const chain: string[] = [];
  for (let d = dir; d.startsWith(top); d = dirname(d)) {
    chain.unshift(d);
    if (d === top) break;
  }
  try {
    for (const d of chain) if (await exists(d)) await fs.chmod(d, 0o755);
    await fn();
  } finally {
    for (const d of chain) if (await exists(d)) await fs.chmod(d, 0o555);
  }
}

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await listFiles(p)));
    else out.push(p);
  }
  return out;
}
