// Compiles an app to JavaScript under dist/, mirroring the repository layout. Used by
// `npx nx build <app>` (tools/build/build.ts) and by `gpufleet up`, which builds what is stale
// before it starts the services from dist/.
//
// What an app needs is found by following its imports from apps/<app>/src/main.ts through the
// compiled output (so type-only imports, which swc drops, pull in nothing). Every file goes
// through @swc/core with the options of .swcrc (legacy decorators with their metadata, which
// NestJS needs; es2022; CommonJS; class names kept; source maps), plus the `@gpufleet/*` path
// aliases of tsconfig.base.json as `jsc.baseUrl`/`jsc.paths`: swc rewrites each aliased import
// to a relative path, and since dist/ mirrors the repository that path holds there too. proto/
// is copied to dist/proto, where libs/contracts finds it (`PROTO_ROOT`, `../../../proto` from
// its src/) for gRPC reflection.
//
// Cache: a file is compiled again only when its source, .swcrc, tsconfig.base.json or this
// file is newer than its output. Outputs are written to a temporary name and renamed, so builds
// of several apps running at once (nx run-many) never leave a half-written shared file.
// @swc/core is loaded when a build runs, not when process-kit is imported (node runtimes import
// process-kit and should not carry a compiler).
import type { Options } from '@swc/core';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'fs';
import { dirname, join, relative, resolve } from 'path';
import { workspaceRoot } from './workspace';

/** The repository the running code belongs to (sources or dist/ alike). */
export const REPO_ROOT = workspaceRoot(__dirname);
export const DIST = join(REPO_ROOT, 'dist');

export interface BuildResult {
  app: string;
  /** Entry point of the built app. */
  main: string;
  /** Source files (relative to the repository) compiled by this run. */
  compiled: string[];
  /** Source files whose output was already up to date. */
  upToDate: number;
  /** Asset files copied by this run. */
  assetsCopied: number;
  ms: number;
}

/** The apps with an entry point (apps/<app>/src/main.ts). */
export function listApps(root = REPO_ROOT): string[] {
  return readdirSync(join(root, 'apps'))
    .filter((name) => existsSync(join(root, 'apps', name, 'src', 'main.ts')))
    .sort();
}

/** `dist/<path>.js` for `<path>.ts`. */
export function outputOf(source: string, root = REPO_ROOT): string {
  return join(root, 'dist', relative(root, source).replace(/\.ts$/, '.js'));
}

function mtime(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return -1;
  }
}

function writeAtomically(path: string, content: string | Buffer): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, content);
  renameSync(tmp, path);
}

/** The options of .swcrc with the path aliases of tsconfig.base.json. */
function swcOptions(root: string): Options {
  const { $schema: _schema, ...swcrc } = JSON.parse(readFileSync(join(root, '.swcrc'), 'utf8')) as Options & { $schema?: string };
  const tsconfig = JSON.parse(readFileSync(join(root, 'tsconfig.base.json'), 'utf8')) as { compilerOptions: { paths: Record<string, string[]> } };
  return { ...swcrc, swcrc: false, jsc: { ...swcrc.jsc, baseUrl: root, paths: tsconfig.compilerOptions.paths } };
}

/** Relative requires of compiled output (aliases are relative by then); comments are not code. */
function relativeRequires(code: string): string[] {
  // Only comments that open a line: a "/*" inside a string (a glob) must not swallow code.
  const withoutComments = code.replace(/^\s*\/\*[\s\S]*?\*\//gm, '').replace(/^\s*\/\/.*$/gm, '');
  return [...withoutComments.matchAll(/\brequire\((["'])(\.\.?(?:\/[^"']*)?)\1\)/g)].map((m) => m[2]);
}

/** The source file a relative require of `from` names: `<x>.ts`, `<x>/index.ts` or `<x>` itself (e.g. JSON). */
function resolveSource(root: string, from: string, specifier: string): string {
  const base = resolve(dirname(from), specifier);
  for (const candidate of [`${base}.ts`, join(base, 'index.ts'), base]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  throw new Error(`${relative(root, from)}: cannot resolve ${specifier}`);
}

/** Copies every file under `from` to `to` whose copy is missing or older; returns how many it copied. */
function copyTree(from: string, to: string): number {
  let copied = 0;
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const src = join(from, entry.name);
    const dst = join(to, entry.name);
    if (entry.isDirectory()) copied += copyTree(src, dst);
    else if (entry.isFile() && mtime(dst) < mtime(src)) {
      writeAtomically(dst, readFileSync(src));
      copied++;
    }
  }
  return copied;
}

/** Builds one app into dist/; with `log`, says what it compiled and how long it took. */
export async function buildApp(app: string, { root = REPO_ROOT, log }: { root?: string; log?: (line: string) => void } = {}): Promise<BuildResult> {
  const entry = join(root, 'apps', app, 'src', 'main.ts');
  if (!existsSync(entry)) throw new Error(`unknown app ${app}: no ${relative(root, entry)} (apps: ${listApps(root).join(', ')})`);
  return buildEntry(entry, { root, log, name: app });
}

/**
 * Builds any entry point of the repository (and what it imports) into dist/, as buildApp does an
 * app's main.ts: for a process that is not an app, e.g. the sample hub `gpufleet up --sample-hub`
 * runs from libs/testing. `entry` is absolute or relative to `root`; `name` is what the result
 * and the log call it (default the entry's path).
 */
export async function buildEntry(entryPath: string, { root = REPO_ROOT, log, name }: { root?: string; log?: (line: string) => void; name?: string } = {}): Promise<BuildResult> {
  const started = process.hrtime.bigint();
  const entry = resolve(root, entryPath);
  if (!existsSync(entry)) throw new Error(`cannot build ${relative(root, entry)}: no such file`);
  const app = name ?? relative(root, entry);
  const options = swcOptions(root);
  const { transform } = require('@swc/core') as typeof import('@swc/core');
  const configTime = Math.max(...['.swcrc', 'tsconfig.base.json', 'libs/process-kit/src/build.ts'].map((f) => mtime(join(root, f))));

  const compiled: string[] = [];
  let upToDate = 0;
  const seen = new Set<string>([entry]);
  let pending = [entry];
  while (pending.length > 0) {
    const next: string[] = [];
    await Promise.all(
      pending.map(async (source) => {
        const out = outputOf(source, root);
        let code: string;
        if (!source.endsWith('.ts')) {
          // A non-TypeScript module (JSON): copied as it is.
          if (mtime(out) < mtime(source)) writeAtomically(out, readFileSync(source));
          return;
        }
        if (mtime(out) >= Math.max(mtime(source), configTime)) {
          code = readFileSync(out, 'utf8');
          upToDate++;
        } else {
          const result = await transform(readFileSync(source, 'utf8'), { ...options, filename: source, sourceFileName: relative(dirname(out), source) });
          code = `${result.code}\n//# sourceMappingURL=${out.slice(dirname(out).length + 1)}.map\n`;
          if (result.map) writeAtomically(`${out}.map`, result.map);
          writeAtomically(out, code);
          compiled.push(relative(root, source));
        }
        for (const specifier of relativeRequires(code)) {
          const dep = resolveSource(root, source, specifier);
          if (!seen.has(dep)) {
            seen.add(dep);
            next.push(dep);
          }
        }
      }),
    );
    pending = next;
  }
  const assetsCopied = copyTree(join(root, 'proto'), join(root, 'dist', 'proto'));
  const ms = Number(process.hrtime.bigint() - started) / 1e6;

  if (log) {
    const byProject = new Map<string, number>();
    for (const file of compiled) {
      const project = file.split('/').slice(0, 2).join('/');
      byProject.set(project, (byProject.get(project) ?? 0) + 1);
    }
    const what = [...byProject].map(([project, n]) => `${project} (${n})`).join(', ');
    log(
      `build ${app}: ${seen.size} modules, ${compiled.length} compiled, ${upToDate} up to date, ${assetsCopied} assets copied, ` +
        `${ms.toFixed(0)} ms → ${relative(root, outputOf(entry, root))}`,
    );
    if (what) log(`  compiled: ${what}`);
  }
  return { app, main: outputOf(entry, root), compiled, upToDate, assetsCopied, ms };
}
