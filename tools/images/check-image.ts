// Checks an app's image without a Docker daemon, by replaying its Dockerfile:
//
//   node -r @swc-node/register tools/images/check-image.ts <app…> | --all   [--keep]
//
// Every stage becomes a directory standing for its filesystem: COPY copies from the build context
// (the repository filtered by .dockerignore, as Docker filters it) or from an earlier stage, RUN
// runs its command there (npm ci against the registry, the builder), ENV, WORKDIR and USER apply.
// RUN steps that install system packages (apt-get) are skipped and said so: they change the base
// image, which is not reproduced; the host's node and npm stand in for the base image's.
//
// The last stage's directory is the image root. The check fails if it holds a TypeScript source,
// a tsconfig or .swcrc, or typescript, @swc/* or @swc-node/* in node_modules; then it starts the
// image's ENTRYPOINT + CMD there as the image's USER (when run as root), with the image's ENV,
// free ports for every *_PORT and a nats-server / redis-server of its own; waits for /readyz,
// runs the HEALTHCHECK command, sends SIGTERM and expects exit 0. It prints the image root's
// size, the production node_modules' size, the time to ready and what the service wrote outside
// its STATE_DIR (docs/operations.md#images).
import { ChildProcess, spawn, spawnSync } from 'child_process';
import { chmodSync, chownSync, closeSync, copyFileSync, cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { basename, dirname, join, posix, relative } from 'path';
import { freePort, listApps, REPO_ROOT, StopWaiting, waitFor } from '@gpufleet/process-kit';
import { RunningServer, startNats, startRedis } from '@gpufleet/testing';
import { contextFiles, copyOf, envOf, globRegex, Instruction, parseDockerignore, readDockerfile, Stage, stageCommand } from './dockerfile';

/** Packages only the build and the tests need (the compiler, swc and its native bindings): none may reach an image. */
function isBuildOnlyPackage(name: string): boolean {
  return name === 'typescript' || name.startsWith('@swc/') || name.startsWith('@swc-node/');
}

interface ServiceNeeds {
  servers: Array<'nats' | 'redis'>;
  env?: (dirs: { state: string }) => Record<string, string>;
  /**
   * The service is ready only once this node's inventory is in NATS, which the node's
   * device-discovery agent publishes: one is started first, from the repository's sources (it is
   * not part of the image), with the simulated provider and this fleet file.
   */
  agent?: { node: string; fleet: string };
}

/** What each service needs around it to get ready here, beyond the image's ENV. */
const SERVICES: Record<string, ServiceNeeds> = {
  scheduler: { servers: ['nats'] },
  // The chart mounts the host's /proc and /sys at HOST_ROOT=/host; here the host is this machine.
  'device-discovery': { servers: ['nats'], env: () => ({ NODE_NAME: 'image-check', HOST_ROOT: '/' }) },
  'node-runtime': {
    servers: ['nats'],
    agent: { node: 'l40s-0', fleet: 'examples/fleets/dev.yaml' },
    env: ({ state }) => ({ NODE_NAME: 'l40s-0', STATE_DIR: state, ADVERTISE_HOST: '127.0.0.1' }),
  },
  'inference-router': { servers: ['nats', 'redis'] },
  'engine-sim': { servers: [] },
};

interface StageState {
  readonly root: string;
  workdir: string;
  env: Record<string, string>;
  user: string | undefined;
}

interface Step {
  stage: string;
  line: number;
  command: string;
  ms: number;
  skipped?: string;
}

export interface ImageFigures {
  app: string;
  imageRootMiB: number;
  nodeModulesMiB: number;
  distMiB: number;
  files: number;
  readyS: number;
  exitCode: number | null;
  stopMs: number;
  user: string;
  /** Files written outside STATE_DIR (under /tmp or HOME). */
  writes: string[];
  /** node-runtime: the engine-sim it starts for simulated engines, and when that was ready. */
  companion?: string;
  steps: Step[];
}

const MiB = 1024 * 1024;

/** A path of a stage's filesystem on this machine. */
function inRoot(root: string, path: string): string {
  return join(root, posix.resolve('/', path));
}

function numericUser(user: string | undefined): { uid: number; gid: number } | undefined {
  if (!user) return undefined;
  const m = /^(\d+)(?::(\d+))?$/.exec(user);
  if (!m) throw new Error(`USER ${user}: only numeric users can be replayed (and Kubernetes' runAsNonRoot needs one)`);
  return { uid: Number(m[1]), gid: Number(m[2] ?? m[1]) };
}

/** uid/gid options for a child: the image's user when this check runs as root, else none. */
function asUser(user: string | undefined): { uid?: number; gid?: number } {
  const ids = numericUser(user);
  return ids && process.getuid?.() === 0 ? ids : {};
}

function copyFile(from: string, to: string): void {
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, to);
}

function isDirectory(path: string): boolean {
  return existsSync(path) && statSync(path).isDirectory();
}

/** COPY from the build context: files, directories (their contents) and globs, as Docker resolves them. */
function copyFromContext(ins: Instruction, state: StageState, context: string[]): void {
  const { sources, dest } = copyOf(ins);
  const target = inRoot(state.root, posix.resolve(state.workdir, dest));
  const intoDirectory = sources.length > 1 || dest.endsWith('/') || /[*?[]/.test(sources.join(''));
  for (const source of sources) {
    const clean = posix.normalize(source).replace(/^\.\//, '').replace(/\/$/, '');
    const depth = clean.split('/').length;
    const glob = /[*?[]/.test(clean) ? globRegex(clean) : undefined;
    const matches = new Set(context.map((f) => f.split('/').slice(0, depth).join('/')).filter((p) => (glob ? glob.test(p) : p === clean)));
    if (matches.size === 0) throw new Error(`line ${ins.line}: COPY ${source}: not in the build context (missing, or left out by .dockerignore)`);
    for (const match of matches) {
      const files = context.filter((f) => f === match || f.startsWith(`${match}/`));
      if (files.length === 1 && files[0] === match) {
        copyFile(join(REPO_ROOT, match), intoDirectory || isDirectory(target) ? join(target, basename(match)) : target);
      } else {
        for (const file of files) copyFile(join(REPO_ROOT, file), join(target, relative(match, file)));
      }
    }
  }
}

/** COPY --from=<stage>: a file or a directory's contents, symlinks kept. */
function copyFromStage(ins: Instruction, state: StageState, stages: Map<string, StageState>): void {
  const { from, sources, dest } = copyOf(ins);
  const source = stages.get(from!);
  if (!source) throw new Error(`line ${ins.line}: COPY --from=${from}: no earlier stage of that name`);
  const target = inRoot(state.root, posix.resolve(state.workdir, dest));
  for (const path of sources) {
    const src = inRoot(source.root, posix.resolve(source.workdir, path));
    if (!existsSync(src)) throw new Error(`line ${ins.line}: COPY --from=${from} ${path}: the stage has no such file`);
    const to = !isDirectory(src) && (dest.endsWith('/') || isDirectory(target)) ? join(target, basename(src)) : target;
    mkdirSync(dirname(to), { recursive: true });
    cpSync(src, to, { recursive: true, verbatimSymlinks: true });
  }
}

function run(ins: Instruction, state: StageState, logFile: string): void {
  const argv = ins.exec ? [...ins.args] : ['/bin/sh', '-c', ins.args[0]];
  const cwd = inRoot(state.root, state.workdir);
  const out = openSync(logFile, 'a');
  try {
    writeFileSync(out, `\n$ ${argv.join(' ')}   (${relative(tmpdir(), cwd)})\n`);
    const result = spawnSync(argv[0], argv.slice(1), {
      cwd,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...state.env },
      stdio: ['ignore', out, out],
      ...asUser(state.user),
    });
    if (result.status !== 0) {
      throw new Error(`line ${ins.line}: RUN ${argv.join(' ')} failed (${result.error?.message ?? `exit ${result.status ?? result.signal}`}):\n${tail(logFile, 15)}`);
    }
  } finally {
    closeSync(out);
  }
}

/** Replays every stage of a Dockerfile under `work`; returns each stage's state and the RUN steps. */
function replay(stages: readonly Stage[], work: string, log: (line: string) => void): { states: Map<string, StageState>; steps: Step[] } {
  const context = contextFiles(REPO_ROOT, parseDockerignore(readFileSync(join(REPO_ROOT, '.dockerignore'), 'utf8')));
  const states = new Map<string, StageState>();
  const steps: Step[] = [];
  const logFile = join(work, 'build.log');
  for (const stage of stages) {
    const root = join(work, 'stages', stage.name);
    const base = states.get(stage.from);
    if (base) cpSync(base.root, root, { recursive: true, verbatimSymlinks: true });
    else mkdirSync(root, { recursive: true });
    const state: StageState = { root, workdir: base?.workdir ?? '/', env: { ...base?.env }, user: base?.user };
    for (const ins of stage.instructions) {
      switch (ins.keyword) {
        case 'WORKDIR':
          state.workdir = posix.resolve(state.workdir, ins.args[0]);
          mkdirSync(inRoot(root, state.workdir), { recursive: true });
          break;
        case 'ENV':
          Object.assign(state.env, envOf(ins));
          break;
        case 'USER':
          state.user = ins.args[0];
          break;
        case 'COPY':
          if (ins.flags.from) copyFromStage(ins, state, states);
          else copyFromContext(ins, state, context);
          break;
        case 'RUN': {
          const command = ins.exec ? ins.args.join(' ') : ins.args[0];
          if (/^\s*apt-get\b/.test(command)) {
            steps.push({ stage: stage.name, line: ins.line, command, ms: 0, skipped: 'installs system packages into the base image' });
            log(`  ${stage.name}: skipped RUN at line ${ins.line} (system packages): ${command.slice(0, 90)}…`);
            break;
          }
          const started = Date.now();
          run(ins, state, logFile);
          const ms = Date.now() - started;
          steps.push({ stage: stage.name, line: ins.line, command, ms });
          log(`  ${stage.name}: RUN ${command} (${(ms / 1000).toFixed(1)} s)`);
          break;
        }
        case 'ADD':
          throw new Error(`line ${ins.line}: ADD is not replayed; use COPY`);
        default:
          break; // LABEL, EXPOSE, VOLUME, HEALTHCHECK, CMD, ENTRYPOINT, ARG: nothing to do on disk
      }
    }
    states.set(stage.name, state);
  }
  return { states, steps };
}

function sizeOf(path: string): { bytes: number; files: number } {
  const st = lstatSync(path);
  if (!st.isDirectory()) return { bytes: st.size, files: 1 };
  let bytes = 0;
  let files = 0;
  for (const entry of readdirSync(path)) {
    const s = sizeOf(join(path, entry));
    bytes += s.bytes;
    files += s.files;
  }
  return { bytes, files };
}

/** Paths (relative to `root`) of what must not be in an image: sources, TypeScript configs, build-only packages. */
export function forbiddenContent(root: string): string[] {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const rel = dir ? `${dir}/${entry.name}` : entry.name;
      const inNodeModules = rel.split('/').includes('node_modules');
      if (entry.isDirectory()) {
        const pkg = rel.replace(/^.*node_modules\//, '');
        if (inNodeModules && isBuildOnlyPackage(pkg)) found.push(rel);
        else walk(rel);
      } else if (!inNodeModules && (/(?<!\.d)\.ts$/.test(entry.name) || /^tsconfig.*\.json$/.test(entry.name) || entry.name === '.swcrc')) {
        found.push(rel);
      }
    }
  };
  walk('');
  return found;
}

/** A child's exit: code (null when killed by a signal). */
function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
}

function tail(file: string, lines = 10): string {
  return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
}

async function ready(url: string, child: ChildProcess, what: string, logFile: string): Promise<number> {
  const started = Date.now();
  try {
    await waitFor(
      `${what} at ${url}`,
      async () => {
        if (child.exitCode !== null || child.signalCode !== null) throw new StopWaiting(`${what} exited (${child.exitCode ?? child.signalCode})`);
        const res = await fetch(url);
        return res.ok || undefined;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
  } catch (err) {
    throw new Error(`${err instanceof Error ? err.message : String(err)}; last lines of ${logFile}:\n${tail(logFile)}`);
  }
  return (Date.now() - started) / 1000;
}

async function stop(child: ChildProcess): Promise<{ code: number | null; ms: number }> {
  const started = Date.now();
  const exit = exitOf(child);
  child.kill('SIGTERM');
  const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const code = await exit;
  clearTimeout(killer);
  return { code, ms: Date.now() - started };
}

/**
 * What the service wrote outside its STATE_DIR: files its user created under the temp directory
 * while it ran (outside this check's own directory), and anything in the HOME it was given.
 */
function writesOutsideState(uid: number, since: string, work: string, home: string): string[] {
  const found = spawnSync('find', [tmpdir(), '-xdev', '-user', String(uid), '-newer', since, '-not', '-path', `${work}*`], { encoding: 'utf8' });
  const inHome = spawnSync('find', [home, '-mindepth', '1'], { encoding: 'utf8' });
  return [...found.stdout.split('\n'), ...inHome.stdout.split('\n')].filter(Boolean);
}

export async function checkImage(app: string, { keep = false, log = (l: string) => console.log(l) } = {}): Promise<ImageFigures> {
  const service = SERVICES[app];
  if (!service) throw new Error(`no image check for ${app} (images: ${Object.keys(SERVICES).join(', ')})`);
  const dockerfile = readDockerfile(join(REPO_ROOT, 'apps', app, 'Dockerfile'));
  const work = mkdtempSync(join(tmpdir(), `gpufleet-image-${app}-`));
  chmodSync(work, 0o755); // the service's user walks into its image root
  const servers: RunningServer[] = [];
  const children: ChildProcess[] = [];
  try {
    log(`${app}: replaying apps/${app}/Dockerfile in ${work}`);
    const { states, steps } = replay(dockerfile.stages, work, log);
    const runtimeStage = dockerfile.stages[dockerfile.stages.length - 1];
    const image = states.get(runtimeStage.name)!;
    const cwd = inRoot(image.root, image.workdir);

    const forbidden = forbiddenContent(image.root);
    if (forbidden.length > 0) throw new Error(`${app}: the image holds what only the build needs:\n  ${forbidden.join('\n  ')}`);
    const total = sizeOf(image.root);
    const nodeModules = sizeOf(join(cwd, 'node_modules'));
    const dist = sizeOf(join(cwd, 'dist'));

    // Around the service: its servers, free ports, a home and state directory its user owns.
    const ids = asUser(image.user);
    const home = join(work, 'home');
    const state = join(work, 'state');
    for (const dir of [home, state]) {
      mkdirSync(dir, { recursive: true });
      if (ids.uid !== undefined) chownSync(dir, ids.uid, ids.gid!);
    }
    const env: Record<string, string> = { PATH: process.env.PATH!, HOME: home, ...image.env };
    for (const key of Object.keys(env).filter((k) => k.endsWith('_PORT'))) env[key] = String(await freePort());
    for (const kind of service.servers) {
      const server = kind === 'nats' ? await startNats() : await startRedis();
      servers.push(server);
      env[kind === 'nats' ? 'NATS_URL' : 'REDIS_URL'] = server.url;
    }
    Object.assign(env, service.env?.({ state }));
    if (service.agent) {
      const agentLog = join(work, 'agent.log');
      const agentOut = openSync(agentLog, 'a');
      const agentHttp = await freePort();
      const agent = spawn(process.execPath, ['-r', 'reflect-metadata', '-r', '@swc-node/register', 'apps/device-discovery/src/main.ts'], {
        cwd: REPO_ROOT,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          NATS_URL: env.NATS_URL,
          NODE_NAME: service.agent.node,
          GPUFLEET_PROVIDERS: 'simulated',
          GPUFLEET_FLEET_FILE: join(REPO_ROOT, service.agent.fleet),
          HTTP_PORT: String(agentHttp),
          GRPC_PORT: String(await freePort()),
        },
        stdio: ['ignore', agentOut, agentOut],
      });
      closeSync(agentOut);
      children.push(agent);
      await ready(`http://127.0.0.1:${agentHttp}/readyz`, agent, `device-discovery for ${service.agent.node} (from sources)`, agentLog);
      log(`  device-discovery for node ${service.agent.node} (from the repository's sources) published its inventory`);
    }

    const { entrypoint, cmd, exec } = stageCommand(runtimeStage);
    if (!exec) throw new Error(`${app}: ENTRYPOINT/CMD in shell form: node would not be PID 1`);
    const argv = [...entrypoint, ...cmd];
    const logFile = join(work, 'service.log');
    const marker = join(work, 'started');
    writeFileSync(marker, '');
    const out = openSync(logFile, 'a');
    const child = spawn(argv[0], argv.slice(1), { cwd, env, stdio: ['ignore', out, out], ...ids });
    closeSync(out);
    children.push(child);
    const opsUrl = `http://127.0.0.1:${env.OPS_PORT ?? env.HTTP_PORT}`;
    const readyS = await ready(`${opsUrl}/readyz`, child, app, logFile);
    log(`  ${argv.join(' ')}: /readyz 200 after ${readyS.toFixed(1)} s`);

    const healthcheck = runtimeStage.instructions.filter((i) => i.keyword === 'HEALTHCHECK').at(-1);
    if (!healthcheck) throw new Error(`${app}: no HEALTHCHECK`);
    const hc = healthcheck.exec ? [...healthcheck.args] : ['/bin/sh', '-c', healthcheck.args[0]];
    const hcRun = spawnSync(hc[0], hc.slice(1), { cwd, env, ...ids, timeout: 10_000 });
    if (hcRun.status !== 0) throw new Error(`${app}: HEALTHCHECK ${hc.join(' ')} exited ${hcRun.status ?? hcRun.signal}`);
    log('  HEALTHCHECK passes');

    let companion: string | undefined;
    if (app === 'node-runtime') {
      // Simulated engines: the runtime starts engine-sim with DEFAULT_ENGINE_SIM_COMMAND, which from
      // dist/ names the built engine-sim next to it. Ask the image for that command and start it.
      const asked = spawnSync('node', ['-e', "process.stdout.write(require('./dist/apps/node-runtime/src/config.js').DEFAULT_ENGINE_SIM_COMMAND)"], { cwd, env, ...ids, encoding: 'utf8' });
      if (asked.status !== 0) throw new Error(`node-runtime: cannot read DEFAULT_ENGINE_SIM_COMMAND: ${asked.stderr}`);
      const [command, ...args] = asked.stdout.trim().split(/\s+/);
      const simLog = join(work, 'engine-sim.log');
      const simOut = openSync(simLog, 'a');
      const simPort = await freePort();
      const sim = spawn(command, args, { cwd, env: { ...env, HTTP_PORT: String(simPort) }, stdio: ['ignore', simOut, simOut], ...ids });
      closeSync(simOut);
      children.push(sim);
      const simReady = await ready(`http://127.0.0.1:${simPort}/readyz`, sim, 'engine-sim', simLog);
      companion = `${relative(cwd, asked.stdout.trim().split(/\s+/).at(-1)!)} (DEFAULT_ENGINE_SIM_COMMAND) ready in ${simReady.toFixed(1)} s`;
      log(`  engine-sim as the runtime starts it: ${asked.stdout.trim()}: ready after ${simReady.toFixed(1)} s`);
      await stop(sim);
    }

    const stopped = await stop(child);
    log(`  SIGTERM: exit ${stopped.code} after ${stopped.ms} ms`);
    if (stopped.code !== 0) throw new Error(`${app}: exited ${stopped.code} on SIGTERM; see ${logFile}`);
    const writes = ids.uid !== undefined ? writesOutsideState(ids.uid, marker, work, home) : [];
    return {
      app,
      imageRootMiB: total.bytes / MiB,
      nodeModulesMiB: nodeModules.bytes / MiB,
      distMiB: dist.bytes / MiB,
      files: total.files,
      readyS,
      exitCode: stopped.code,
      stopMs: stopped.ms,
      user: ids.uid !== undefined ? `${ids.uid}:${ids.gid}` : `${process.getuid?.()} (not root: USER not applied)`,
      writes,
      companion,
      steps,
    };
  } finally {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    for (const server of servers) await server.dispose();
    if (keep) log(`  kept ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
}

async function main(argv: string[]): Promise<void> {
  const keep = argv.includes('--keep');
  const named = argv.filter((a) => !a.startsWith('--'));
  const apps = argv.includes('--all') ? listApps().filter((a) => existsSync(join(REPO_ROOT, 'apps', a, 'Dockerfile'))) : named;
  if (apps.length === 0) {
    console.error(`usage: node -r @swc-node/register tools/images/check-image.ts <app…> | --all [--keep]   (images: ${Object.keys(SERVICES).join(', ')})`);
    process.exit(2);
  }
  const figures: ImageFigures[] = [];
  for (const app of apps) figures.push(await checkImage(app, { keep }));
  const fixed = (n: number) => n.toFixed(1);
  console.log('\n| image | image root (MiB) | production node_modules (MiB) | dist/ (MiB) | files | ready (s) | SIGTERM exit | user | writes outside STATE_DIR |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |');
  for (const f of figures) {
    console.log(`| ${f.app} | ${fixed(f.imageRootMiB)} | ${fixed(f.nodeModulesMiB)} | ${fixed(f.distMiB)} | ${f.files} | ${fixed(f.readyS)} | ${f.exitCode} in ${f.stopMs} ms | ${f.user} | ${f.writes.length === 0 ? 'none' : f.writes.join(', ')} |`);
  }
  for (const f of figures.filter((x) => x.companion)) console.log(`${f.app}: ${f.companion}`);
  for (const f of figures) for (const s of f.steps.filter((x) => x.skipped)) console.log(`${f.app}: not replayed (${s.skipped}): line ${s.line} of its Dockerfile`);
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
