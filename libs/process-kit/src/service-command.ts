import { join } from 'path';
import { buildApp, REPO_ROOT } from './build';
import { nodeFlagsOf } from './node-flags';

/**
 * Node arguments that run a gpufleet app from its build, as the images and `gpufleet up` do:
 * `<NODE_FLAGS> -r reflect-metadata <root>/dist/apps/<app>/src/main.js`. Spawn with
 * `process.execPath` and cwd `root`.
 */
export function builtServiceArgs(app: string, root = REPO_ROOT): string[] {
  return [...nodeFlagsOf(app), '-r', 'reflect-metadata', join(root, 'dist', 'apps', app, 'src', 'main.js')];
}

/** The same app from its TypeScript sources through @swc-node/register (`up --from-source`, `nx serve`). */
export function sourceServiceArgs(app: string, root = REPO_ROOT): string[] {
  return [...nodeFlagsOf(app), '-r', 'reflect-metadata', '-r', '@swc-node/register', join(root, 'apps', app, 'src', 'main.ts')];
}

/**
 * builtServiceArgs after bringing the app's build up to date (cached: nothing is compiled when
 * dist/ is fresh), for tests and tools that start services as processes: they then run exactly
 * what ships, never a stale build.
 */
export async function freshServiceArgs(app: string, root = REPO_ROOT): Promise<string[]> {
  await buildApp(app, { root });
  return builtServiceArgs(app, root);
}
