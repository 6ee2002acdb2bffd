// What every image must be (docs/operations.md#images), checked on the Dockerfiles and the
// .dockerignore themselves: built output and production dependencies only, started with plain
// node as a non-root user. tools/images/check-image.ts replays them for real (npm, the builder,
// the service); this spec keeps `npm test` failing when a Dockerfile drifts back.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { dirname, join } from 'path';
import { builtServiceArgs, nodeFlagsOf, REPO_ROOT } from '@gpufleet/process-kit';
import { forbiddenContent } from './check-image';
import { contextFiles, copyOf, Dockerfile, instructions, isIgnored, parseDockerfile, parseDockerignore, readDockerfile, Stage, stageCommand, stageEnv, stageUser, words } from './dockerfile';

const IMAGES = readdirSync(join(REPO_ROOT, 'apps'))
  .filter((app) => existsSync(join(REPO_ROOT, 'apps', app, 'Dockerfile')))
  .sort();

const dockerignore = parseDockerignore(readFileSync(join(REPO_ROOT, '.dockerignore'), 'utf8'));
const context = contextFiles(REPO_ROOT, dockerignore);

function runs(stage: Stage): string[] {
  return instructions(stage, 'RUN').map((r) => r.args.join(' '));
}

function stageNamed(file: Dockerfile, name: string | undefined): Stage {
  const stage = file.stages.find((s) => s.name === name);
  if (!stage) throw new Error(`no stage ${name}`);
  return stage;
}

/** Words of the builder's RUN (`node -r @swc-node/register tools/build/build.ts <app…>`), or undefined. */
function builderRun(stage: Stage): string[] | undefined {
  const run = runs(stage).find((r) => r.includes('tools/build/build.ts'));
  return run ? words(run) : undefined;
}

it('the six services have an image', () => {
  expect(IMAGES).toEqual(['device-discovery', 'engine-sim', 'inference-router', 'model-delivery', 'node-runtime', 'scheduler']);
});

describe.each(IMAGES)('apps/%s/Dockerfile', (app) => {
  const file = readDockerfile(join(REPO_ROOT, 'apps', app, 'Dockerfile'));
  const runtime = file.stages[file.stages.length - 1];
  const copies = instructions(runtime, 'COPY').map(copyOf);

  it('compiles the app with the builder in a stage that installed every dependency', () => {
    const build = file.stages.find((s) => builderRun(s));
    expect(build).toBeDefined();
    expect(builderRun(build!)!.slice(builderRun(build!)!.indexOf('tools/build/build.ts') + 1)).toContain(app);
    expect(runs(build!).some((r) => /^npm ci\b/.test(r) && !r.includes('--omit=dev'))).toBe(true);
    expect(stageEnv(build!).NODE_ENV).toBeUndefined(); // NODE_ENV=production would make npm ci skip devDependencies
  });

  it('copies into the runtime stage only package.json, the built dist/ and production node_modules', () => {
    for (const { from, sources } of copies) {
      if (from === undefined) expect(sources).toEqual(['package.json']);
      else expect(sources).toHaveLength(1);
    }
    const dist = copies.find((c) => c.sources[0] === '/app/dist');
    expect(dist).toMatchObject({ dest: './dist' });
    expect(builderRun(stageNamed(file, dist!.from))).toBeDefined();
    const modules = copies.find((c) => c.sources[0] === '/app/node_modules');
    expect(modules).toMatchObject({ dest: './node_modules' });
    const deps = stageNamed(file, modules!.from);
    expect(runs(deps).filter((r) => /^npm ci\b/.test(r))).toEqual([expect.stringContaining('--omit=dev')]);
    expect(builderRun(deps)).toBeUndefined();
    expect(copies.map((c) => c.sources[0]).sort()).toEqual(['/app/dist', '/app/node_modules', 'package.json']);
    expect(instructions(runtime, 'ADD')).toEqual([]);
  });

  it('starts plain node on the built entry point, as PID 1', () => {
    const { entrypoint, cmd, exec } = stageCommand(runtime);
    const argv = [...entrypoint, ...cmd];
    expect(exec).toBe(true);
    expect(argv[0]).toBe('node');
    expect(argv).toContain(`dist/apps/${app}/src/main.js`);
    expect(argv[argv.indexOf('-r') + 1]).toBe('reflect-metadata');
    expect(argv.filter((a) => a === '-r')).toHaveLength(1);
    expect(argv.some((a) => a.endsWith('.ts'))).toBe(false);
  });

  it('names no compiler, swc setting or TypeScript file in the runtime stage', () => {
    const text = JSON.stringify(runtime.instructions);
    expect(text).not.toMatch(/swc|typescript|tsconfig|\.ts\b/i);
  });

  it('runs as a numeric non-root user and has a HEALTHCHECK for docker run', () => {
    expect(stageUser(runtime)).toMatch(/^[1-9]\d*:[1-9]\d*$/);
    const [healthcheck] = instructions(runtime, 'HEALTHCHECK');
    expect(healthcheck).toMatchObject({ exec: true, args: ['node', '-e', expect.stringContaining('/healthz')] });
  });

  it('finds everything its stages copy from the build context', () => {
    for (const stage of file.stages) {
      for (const { from, sources } of instructions(stage, 'COPY').map(copyOf)) {
        if (from !== undefined) continue;
        for (const source of sources) {
          const prefix = source.replace(/\/$/, '');
          const glob = new RegExp(`^${prefix.replace(/\./g, '\\.').replace(/\*/g, '[^/]*')}(/|$)`);
          expect([source, context.some((f) => glob.test(f))]).toEqual([source, true]);
        }
      }
    }
  });
});

it('the node-runtime image holds the built engine-sim that a runtime from dist/ starts for simulated engines', () => {
  const file = readDockerfile(join(REPO_ROOT, 'apps/node-runtime/Dockerfile'));
  const build = file.stages.find((s) => builderRun(s))!;
  expect(builderRun(build)).toEqual(expect.arrayContaining(['node-runtime', 'engine-sim']));
  // DEFAULT_ENGINE_SIM_COMMAND from dist/apps/node-runtime/src/config.js:
  expect(readFileSync(join(REPO_ROOT, 'apps/node-runtime/src/config.ts'), 'utf8')).toContain("resolve(__dirname, '../../engine-sim/src/main.js')");
});

it('every image starts node with the flags `gpufleet up` gives the service (process-kit NODE_FLAGS)', () => {
  for (const app of IMAGES) {
    const { entrypoint, cmd } = stageCommand(readDockerfile(join(REPO_ROOT, 'apps', app, 'Dockerfile')).stages.at(-1)!);
    const argv = [...entrypoint, ...cmd];
    expect({ app, flags: argv.slice(1, argv.indexOf('-r')) }).toEqual({ app, flags: nodeFlagsOf(app) });
    // What `gpufleet up` and the process-level tests run: the same flags before the same entry point.
    expect(builtServiceArgs(app, '/app')).toEqual([...nodeFlagsOf(app), '-r', 'reflect-metadata', `/app/${argv.at(-1)}`]);
  }
  expect(nodeFlagsOf('scheduler')).toEqual(['--min-semi-space-size=64', '--max-semi-space-size=64']);
  expect(readFileSync(join(REPO_ROOT, 'apps/cli/src/commands/up.ts'), 'utf8')).toContain('builtServiceArgs(app, REPO_ROOT)');
});

describe('.dockerignore', () => {
  it('sends the builder and the sources, not tests, fixtures, build output, dependencies or secrets', () => {
    expect(context).toEqual(expect.arrayContaining(['package.json', 'package-lock.json', '.swcrc', 'tsconfig.base.json', 'tools/build/build.ts', 'libs/contracts/src/grpc.ts']));
    expect(context.filter((f) => /\.spec\.ts$|__fixtures__|(^|\/)node_modules\/|^dist\/|^e2e\/|^docs\/|^charts\//.test(f))).toEqual([]);
    expect(context.filter((f) => f.startsWith('tools/'))).toEqual(['tools/build/build.ts']);
    for (const secret of ['.env', '.env.local', 'certs/tls.key', 'nats/user.creds']) expect([secret, isIgnored(secret, dockerignore)]).toEqual([secret, true]);
  });
});

describe('the Dockerfile reader', () => {
  it('joins continued lines, drops comments inside them, reads exec forms, flags, global ARGs and stages', () => {
    const file = parseDockerfile(
      [
        '# syntax=docker/dockerfile:1',
        'ARG BASE=node:20',
        'FROM ${BASE} AS build',
        'RUN --mount=type=cache,target=/root/.npm \\',
        '# a comment inside',
        '    npm ci',
        'FROM ${BASE}',
        'ENV A=1 \\',
        '    B="two words"',
        'ENV C 3',
        'COPY --from=build /app/dist ./dist',
        'USER 1000:1000',
        'HEALTHCHECK --interval=15s CMD ["node", "-e", "x"]',
        'CMD ["node", "main.js"]',
      ].join('\n'),
    );
    expect(file.args).toEqual({ BASE: 'node:20' });
    expect(file.stages.map((s) => [s.name, s.from])).toEqual([['build', 'node:20'], ['1', 'node:20']]);
    expect(file.stages[0].instructions[0]).toMatchObject({ line: 4, keyword: 'RUN', flags: { mount: 'type=cache,target=/root/.npm' }, args: ['npm ci'], exec: false });
    const [, runtime] = file.stages;
    expect(stageEnv(runtime)).toEqual({ A: '1', B: 'two words', C: '3' });
    expect(copyOf(instructions(runtime, 'COPY')[0])).toEqual({ from: 'build', sources: ['/app/dist'], dest: './dist' });
    expect(stageUser(runtime)).toBe('1000:1000');
    expect(instructions(runtime, 'HEALTHCHECK')[0]).toMatchObject({ flags: { interval: '15s' }, args: ['node', '-e', 'x'], exec: true });
    expect(stageCommand(runtime)).toEqual({ entrypoint: [], cmd: ['node', 'main.js'], exec: true });
  });

  it('names the line it cannot read', () => {
    expect(() => parseDockerfile('FROM node\n\n= oops\n', 'apps/x/Dockerfile')).toThrow('apps/x/Dockerfile:3: not an instruction: = oops');
    expect(() => parseDockerfile('RUN true\n', 'D')).toThrow('D:1: RUN before the first FROM');
  });

  it('matches .dockerignore rules as Docker does: parent directories, **, and the last matching rule wins', () => {
    const rules = parseDockerignore('# c\n**/node_modules\n/dist/\ntools\n!tools/build/build.ts\n*.md\n!README*.md\nREADME-secret.md\n');
    expect(isIgnored('libs/x/node_modules/a/index.js', rules)).toBe(true);
    expect(isIgnored('dist/apps/x.js', rules)).toBe(true);
    expect(isIgnored('tools/build/build.ts', rules)).toBe(false);
    expect(isIgnored('tools/build/build.spec.ts', rules)).toBe(true);
    expect(isIgnored('README.md', rules)).toBe(false);
    expect(isIgnored('README-secret.md', rules)).toBe(true);
    expect(isIgnored('docs/a.md', rules)).toBe(false); // *.md is the context root only
  });
});

describe('forbiddenContent', () => {
  let root: string;
  beforeEach(() => (root = mkdtempSync(join(tmpdir(), 'gpufleet-image-root-'))));
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('finds sources, TypeScript configs and build-only packages, and nothing in built output', () => {
    for (const f of [
      'dist/apps/x/src/main.js',
      'dist/apps/x/src/main.js.map',
      'node_modules/pino/index.js',
      'node_modules/@grpc/grpc-js/build/index.d.ts',
      'node_modules/typescript/package.json',
      'node_modules/@swc/core-linux-x64-gnu/package.json',
      'node_modules/a/node_modules/@swc-node/register/index.js',
      'apps/x/src/main.ts',
      'tsconfig.json',
      '.swcrc',
    ]) {
      mkdirSync(dirname(join(root, f)), { recursive: true });
      writeFileSync(join(root, f), '');
    }
    expect(forbiddenContent(root).sort()).toEqual([
      '.swcrc',
      'apps/x/src/main.ts',
      'node_modules/@swc/core-linux-x64-gnu',
      'node_modules/a/node_modules/@swc-node/register',
      'node_modules/typescript',
      'tsconfig.json',
    ]);
  });
});
