import { promises as fs } from 'node:fs';
import * as path from 'node:path';

/**
 * Paths on the host are always resolved under an injectable root so the agent can run in a
 * container with the host's / mounted at /host, and tests can point at a fixture tree.
 */
export function hostPath(root: string, absolute: string): string {
  return path.join(root, absolute);
}

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/** The file's text, or undefined when it does not exist. Other errors (EACCES, EIO) propagate. */
export async function readOptionalText(file: string): Promise<string | undefined> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}

/** Entry names of a directory, sorted, or [] when it does not exist. */
export async function listOptionalDir(dir: string): Promise<string[]> {
  try {
    return (await fs.readdir(dir)).sort(naturalCompare);
  } catch (error) {
    if (isMissing(error)) return [];
    throw error;
  }
}

export async function readOptionalLink(file: string): Promise<string | undefined> {
  try {
    return await fs.readlink(file);
  } catch (error) {
    // EINVAL: the path exists but is not a symlink (a fixture or a flattened copy of sysfs).
    if (isMissing(error) || (error as NodeJS.ErrnoException).code === 'EINVAL') return undefined;
    throw error;
  }
}

export async function exists(file: string): Promise<boolean> {
  try {
    await fs.access(file);
    return true;
  } catch {
    return false;
  }
}

/** Orders "mlx5_10" after "mlx5_9" and "node10" after "node2", as people expect. */
export function naturalCompare(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true });
}
