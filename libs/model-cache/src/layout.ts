import { randomBytes } from 'crypto';
import { constants, promises as fs } from 'fs';
import { dirname, join } from 'path';
import type { BlobDigest } from './manifest';

/**
 * Where everything lives under the cache root. Only `blobs/`, `trees/` and `hf/` are read by
 * workloads; `partial/`, `tmp/` and `state/` are the cache's own.
 */
export class CacheLayout {
  constructor(readonly root: string) {}

  get blobsDir(): string {
    return join(this.root, 'blobs');
  }
  get partialDir(): string {
    return join(this.root, 'partial');
  }
  get treesDir(): string {
    return join(this.root, 'trees');
  }
  get stateDir(): string {
    return join(this.root, 'state');
  }
  get tmpDir(): string {
    return join(this.root, 'tmp');
  }
  /** what an engine is given as HF_HUB_CACHE */
  get hfCacheDir(): string {
    return join(this.root, 'hf');
  }

  blob(d: BlobDigest): string {
    return join(this.blobsDir, d.alg, d.hex);
  }
  partial(d: BlobDigest): string {
    return join(this.partialDir, `${d.alg}-${d.hex}`);
  }
  checkpoint(d: BlobDigest): string {
    return `${this.partial(d)}.checkpoint.json`;
  }
  /** manifest digest `sha256:<hex>` → its tree directory */
  tree(manifestDigest: string): string {
    return join(this.treesDir, hexOf(manifestDigest));
  }
  record(manifestDigest: string): string {
    return join(this.stateDir, `${hexOf(manifestDigest)}.json`);
  }

  async create(): Promise<void> {
    for (const d of [this.root, this.blobsDir, join(this.blobsDir, 'sha256'), join(this.blobsDir, 'gitsha1'), this.partialDir, this.treesDir, this.stateDir, this.tmpDir, this.hfCacheDir]) {
      await fs.mkdir(d, { recursive: true });
    }
  }

  tmpName(prefix: string): string {
    return join(this.tmpDir, `${prefix}-${randomBytes(6).toString('hex')}`);
  }
}

export function hexOf(manifestDigest: string): string {
  return manifestDigest.slice(manifestDigest.indexOf(':') + 1);
}

/** Writes a small file so a reader sees the old or the new content, never a torn one, even after a crash. */
export async function writeFileAtomic(path: string, data: string): Promise<void> {
  const tmp = `${path}.${randomBytes(4).toString('hex')}.tmp`;
  const fh = await fs.open(tmp, 'w', 0o644);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await fs.rename(tmp, path);
  await fsyncDir(dirname(path));
}

/** A rename is durable only once its directory is synced. */
export async function fsyncDir(dir: string): Promise<void> {
  const fh = await fs.open(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Removes a read-only tree: its directories are 0555, so they are made writable first. */
export async function removeTree(path: string): Promise<void> {
  const st = await fs.lstat(path).catch(() => undefined);
  if (!st) return;
  if (st.isDirectory()) {
    await fs.chmod(path, 0o755);
    for (const e of await fs.readdir(path)) await removeTree(join(path, e));
    await fs.rmdir(path);
  } else {
    await fs.unlink(path);
  }
}

export async function exists(path: string): Promise<boolean> {
  return fs.lstat(path).then(
    () => true,
    () => false,
  );
}
