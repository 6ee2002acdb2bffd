import { existsSync } from 'fs';
import { dirname, join, resolve } from 'path';

/**
 * The nearest directory at or above `from` holding a package.json: the workspace root, whether
 * the code runs from its sources (apps/<app>/src/…) or from the build (dist/apps/<app>/src/…,
 * dist/ has no package.json), or from an image that ships package.json at its root.
 */
export function workspaceRoot(from: string): string {
  for (let dir = resolve(from); ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json at or above ${from}`);
  }
}
