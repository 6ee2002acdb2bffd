/** A file or directory on the resolving host, hashed with SHA-256 file by file (symbolic links followed, as an HF cache snapshot is made of them). */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ResolutionError } from './failure';
import { ResolvedFile, SourceContext, SourceListing } from './resolution';

const MAX_DEPTH = 64;

export async function resolveLocal(source: { path: string }, ctx: SourceContext): Promise<SourceListing> {
  const root = await stat(source.path).catch((err: NodeJS.ErrnoException) => {
    throw new ResolutionError('SourceUnavailable', `local path ${source.path} cannot be read on this host (${err.code ?? err.message})`);
  });
  const found: { path: string; abs: string; size: number }[] = [];
  let listed = 0;
  const visit = async (dir: string, rel: string, depth: number): Promise<void> => {
    if (depth > MAX_DEPTH) throw new ResolutionError('SourceUnavailable', `${dir} is nested more than ${MAX_DEPTH} levels deep (a symbolic link loop?)`);
    const names = (await readdir(dir)).sort();
    for (const name of names) {
      const abs = join(dir, name);
      const path = rel ? `${rel}/${name}` : name;
      const st = await stat(abs).catch(() => undefined);
      if (!st) continue; // a dangling link is no file of the artifact
      if (st.isDirectory()) await visit(abs, path, depth + 1);
      else if (st.isFile()) {
        if (++listed > ctx.limits.maxFiles) throw new ResolutionError('SourceUnavailable', `${source.path} holds more than ${ctx.limits.maxFiles} files`);
        if (ctx.selected(path)) found.push({ path, abs, size: st.size });
      }
    }
  };
  if (root.isDirectory()) await visit(source.path, '', 0);
  else {
    listed = 1;
    if (ctx.selected(basename(source.path))) found.push({ path: basename(source.path), abs: source.path, size: root.size });
  }
  const files: ResolvedFile[] = [];
  for (const f of found) {
    const hash = createHash('sha256');
    let size = 0;
    for await (const chunk of createReadStream(f.abs)) {
      size += (chunk as Buffer).length;
      hash.update(chunk as Buffer);
    }
    files.push({ path: f.path, size, digest: `sha256:${hash.digest('hex')}`, download: { url: pathToFileURL(f.abs).href, headers: {}, bearerToken: false } });
  }
  return { files, listed };
}
