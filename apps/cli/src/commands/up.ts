import { randomBytes } from 'crypto';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'fs';
import { join, resolve } from 'path';
import { CapacityServiceClient } from '@gpufleet/contracts';
import { loadFleetFile } from '@gpufleet/device-inventory';
import { callUnary, channelCredentials } from '@gpufleet/grpc-kit';
import { adminTokenPath, cliClientOptions, ensureAdminToken } from '../admin';
import { ManagedProcess, ProcessGroup, ServiceProcessSpec, StopWaiting, buildApp, buildEntry, freePort, outputOf, isPortOpen, logTail, builtServiceArgs, requireBinary, sourceServiceArgs, waitFor } from '@gpufleet/process-kit';
import { StackContext, readLiveContext, removeContext, writeContext } from '../context';
import { killRecordedPods, nodeStateDir, nodesDir } from '../up/node-pods';
import { NatsAuthFiles, natsAuthDir, nodeIdentityName, stackIdentities, writeNatsAuth } from '../up/nats-auth';

const REPO_ROOT = resolve(__dirname, '../../../..');

export interface UpOptions {
  home: string;
  fleet: string;
  natsUrl?: string;
  schedulerPort: number;
  schedulerHttpPort: number;
  natsPort: number;
  /** Use this Redis instead of starting redis-server. */
  redisUrl?: string;
  redisPort: number;
  /** Preferred port of the router's OpenAI API. */
  routerPort: number;
  /** The router requires API keys (AUTH_REQUIRED=true). */
  routerAuth: boolean;
  /** The Hugging Face hub artifacts are resolved against (model delivery's HF_ENDPOINT); default the public one. */
  hfEndpoint?: string;
  /**
   * Start the hub simulator on loopback with the sample repositories (sample/tiny-llama,
   * sample/tiny-llama-gguf) and resolve artifacts against it: deploy-from-hub works offline.
   * Excludes hfEndpoint.
   */
  sampleHub?: boolean;
  heartbeatIntervalS: number;
  notReadyTimeoutS: number;
  /** Seconds a replica on a NotReady node waits before the scheduler moves it. */
  rescheduleAfterS: number;
  logLevel: string;
  /**
   * Access control (default): every service gets the bootstrap admin token (GPUFLEET_ADMIN_TOKEN,
   * or the one kept in <home>/admin-token, made on the first run), which turns it on, and each
   * process a NATS identity of its own (<home>/nats-auth, unless --nats-url). false: an open stack
   * (`--no-auth`), NATS included.
   */
  auth?: boolean;
  /** Address every service listens on (HOST); default 127.0.0.1. */
  listenHost?: string;
  /**
   * How many nodes of the fleet one device-discovery agent process and one node runtime process
   * present (SIMULATED_NODES); 1 gives every node processes of its own, as on real hardware.
   */
  nodesPerProcess?: number;
  /** Keep the NATS store (KV state, events) of the previous run in this home. */
  keepState?: boolean;
  /**
   * Run the services from their TypeScript sources through @swc-node/register (the edit loop)
   * instead of the build in dist/, which `up` otherwise brings up to date first.
   */
  fromSource?: boolean;
  log?: (line: string) => void;
  /**
   * Receives the stop function as soon as the first process is about to start, so that a signal
   * during start-up stops what was started (start-up then fails instead of going on).
   */
  onStopReady?: (stop: () => Promise<void>) => void;
}

/** A preferred port when free, else any free one (said out loud, and recorded in the context). */
async function pickPort(what: string, preferred: number, log: (l: string) => void): Promise<number> {
  if (preferred > 0 && !(await isPortOpen(preferred))) return preferred;
  const port = await freePort();
  if (preferred > 0) log(`port ${preferred} for ${what} is taken; using ${port}`);
  return port;
}


/** The apps `up` runs; engine-sim is what the node runtimes start for simulated engines. */
const STACK_APPS = ['scheduler', 'device-discovery', 'node-runtime', 'inference-router', 'model-delivery', 'engine-sim'];

function serviceArgs(app: string, fromSource: boolean): string[] {
  // The flags the images use too (process-kit NODE_FLAGS): the scheduler's young generation,
  // the node-side processes' small heap with its bound.
  return fromSource ? sourceServiceArgs(app, REPO_ROOT) : builtServiceArgs(app, REPO_ROOT);
}

/**
 * The hub of `--sample-hub`: the hub simulator of libs/testing with its sample repositories. It is
 * started by path, never imported, so the CLI does not depend on the test harness.
 */
const SAMPLE_HUB_ENTRY = 'libs/testing/src/hf-hub/sample-hub.ts';

/** What the sample hub's ready file says (libs/testing/src/hf-hub/sample-hub.ts). */
interface SampleHubReady {
  url: string;
  repos: Array<{ id: string; commit: string; files: number; bytes: number }>;
}

/** Brings dist/ up to date for the stack's apps (a no-op when nothing changed), saying what it compiled. */
async function buildStack(log: (line: string) => void, sampleHub: boolean): Promise<void> {
  const results = [];
  for (const app of STACK_APPS) results.push(await buildApp(app, { root: REPO_ROOT }));
  if (sampleHub) results.push(await buildEntry(SAMPLE_HUB_ENTRY, { root: REPO_ROOT, name: 'sample-hub' }));
  const compiled = results.reduce((n, r) => n + r.compiled.length, 0);
  const ms = results.reduce((n, r) => n + r.ms, 0);
  if (compiled > 0) log(`built ${compiled} files of ${results.filter((r) => r.compiled.length > 0).map((r) => r.app).join(', ')} into dist/ in ${(ms / 1000).toFixed(1)} s`);
}

const LOOPBACK = '127.0.0.1';

/** Where pods are advertised (and so bound) for a listen address: a wildcard is not a place to reach. */
export function advertiseHostFor(listenHost: string): string {
  return listenHost === '0.0.0.0' || listenHost === '::' || listenHost === '[::]' ? LOOPBACK : listenHost;
}

/** Nodes per agent and runtime process when not told: a 1,000-node fleet is four of each. */
export const DEFAULT_NODES_PER_PROCESS = 250;

/** The fleet's nodes in groups of at most `size`, in file order: one agent and one runtime per group. */
export function nodeGroups<T>(nodes: readonly T[], size: number): T[][] {
  if (!Number.isInteger(size) || size < 1) throw new Error(`--nodes-per-process: expected a positive integer, got ${size}`);
  const groups: T[][] = [];
  for (let i = 0; i < nodes.length; i += size) groups.push(nodes.slice(i, i + size));
  return groups;
}

/** `h100-0` for one node, `h100-0+4` for a group of five. */
function groupName(names: readonly string[]): string {
  return names.length === 1 ? names[0] : `${names[0]}+${names.length - 1}`;
}

/** The credentials a stack's NATS server does not know; `up` gives its processes their own. */
const NATS_CREDENTIAL_VARS = ['NATS_CREDS_FILE', 'NATS_NKEY_SEED_FILE', 'NATS_USER', 'NATS_PASSWORD', 'NATS_TOKEN'];

/**
 * `gpufleet up`: nats-server (unless --nats-url), redis-server (unless --redis-url), the
 * scheduler, the inference router, and per group of `nodesPerProcess` nodes of the fleet file one
 * device-discovery agent and one node runtime (SIMULATED_NODES), as local processes. Returns a function that stops them all, and the pods the
 * runtimes leave running.
 */
export async function up(opts: UpOptions): Promise<{ context: StackContext; stop: () => Promise<void> }> {
  const log = opts.log ?? ((l: string) => process.stdout.write(l + '\n'));
  if (opts.sampleHub && opts.hfEndpoint) throw new Error('--sample-hub and --hf-endpoint: choose one (the sample hub is the endpoint it sets)');
  const running = readLiveContext(opts.home);
  if (running) {
    throw new Error(`a gpufleet stack already runs from ${opts.home} (pid ${running.pid}); stop it, or use another --home`);
  }
  // A relative --fleet is looked up in the current directory, then in the repository.
  const fleetFile = existsSync(resolve(opts.fleet)) ? resolve(opts.fleet) : resolve(REPO_ROOT, opts.fleet);
  const fleet = await loadFleetFile(fleetFile);
  const logsDir = join(opts.home, 'logs');
  mkdirSync(logsDir, { recursive: true });

  const onUnexpectedExit = (p: ManagedProcess, code: number | null, signal: NodeJS.Signals | null) => {
    const last = logTail(p.spec.logFile, 1)[0];
    log(`! ${p.spec.name} exited unexpectedly (${signal ?? `code ${code}`})${last ? `: ${last}` : ''}; see ${p.spec.logFile}`);
  };
  const group = new ProcessGroup(onUnexpectedExit);
  // One group per node runtime, so that they stop in parallel (a group stops its members in turn).
  const runtimes: ProcessGroup[] = [];
  // The router stops first, while the engines it sends requests to and the Redis and NATS it
  // flushes usage to are still there.
  const edge = new ProcessGroup(onUnexpectedExit);
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await edge.stopAll();
      // Runtimes next: they detach from their pods on SIGTERM, leaving them for the next runtime
      // to adopt. Nothing will adopt them after a full shutdown, so they are killed next.
      await Promise.all(runtimes.map((g) => g.stopAll()));
      const killed = await killRecordedPods(fleet.nodes.map((n) => nodeStateDir(opts.home, n.name)), { log });
      if (killed > 0) log(`stopped ${killed} pod process(es) the node runtimes left running`);
      await group.stopAll();
      removeContext(opts.home);
    })());
  /** Starts a process of the stack, unless the stack is being stopped. */
  const start = (into: ProcessGroup, spec: ServiceProcessSpec): ManagedProcess => {
    if (stopping) throw new Error('gpufleet up was stopped while starting');
    return into.start(spec);
  };
  opts.onStopReady?.(stop);
  const startedAt = Date.now();
  const fromSource = opts.fromSource ?? false;
  const args = (app: string) => serviceArgs(app, fromSource);
  /** Each service's /readyz, timed from the start of `up`. */
  const readiness: Array<{ process: ManagedProcess; ops: string }> = [];
  try {
    if (!fromSource) await buildStack(log, opts.sampleHub ?? false);
    const groups = nodeGroups(fleet.nodes.map((n) => n.name), opts.nodesPerProcess ?? DEFAULT_NODES_PER_PROCESS);
    let natsUrl = opts.natsUrl;
    const rows: Array<[string, string, string]> = [];
    /** Set when `up` runs the NATS server with one nkey identity per process; not for --no-auth or --nats-url. */
    let natsAuth: NatsAuthFiles | undefined;
    if (!natsUrl) {
      // The server holds public keys only; each process gets its seed as a file named in its
      // environment (NATS_NKEY_SEED_FILE), never on a command line.
      if (opts.auth !== false) natsAuth = writeNatsAuth(opts.home, fleet.cluster, stackIdentities(groups.map((nodes) => ({ label: groupName(nodes), nodes }))));
      // An open stack: seeds of an earlier run would only suggest an authorization that is not there.
      else rmSync(natsAuthDir(opts.home), { recursive: true, force: true });
      const natsPort = await pickPort('NATS', opts.natsPort, log);
      const storeDir = join(opts.home, 'nats');
      // The simulated fleet is described afresh by the fleet file on every `up`; state from an
      // earlier run (nodes of another fleet file, old workloads) is kept only when asked for.
      if (!opts.keepState) rmSync(storeDir, { recursive: true, force: true });
      mkdirSync(storeDir, { recursive: true });
      const nats = start(group, {
        name: 'nats-server',
        command: requireBinary('nats-server'),
        args: [...(natsAuth ? ['-c', natsAuth.configFile] : []), '-a', '127.0.0.1', '-p', String(natsPort), '-js', '-sd', storeDir],
        logFile: join(logsDir, 'nats-server.log'),
      });
      await waitForPort(nats, natsPort);
      natsUrl = `nats://127.0.0.1:${natsPort}`;
      rows.push(['nats-server', natsAuth ? `${natsUrl}  (an nkey identity per process: ${natsAuth.configFile})` : natsUrl, nats.spec.logFile]);
    }

    let redisUrl = opts.redisUrl;
    if (!redisUrl) {
      const redisPort = await pickPort('Redis', opts.redisPort, log);
      // Rate limits and usage counters of a local stack need not outlive it: no RDB, no AOF.
      const redisDir = join(opts.home, 'redis');
      mkdirSync(redisDir, { recursive: true });
      const redis = start(group, {
        name: 'redis-server',
        command: requireBinary('redis-server'),
        args: ['--bind', '127.0.0.1', '--port', String(redisPort), '--save', '', '--appendonly', 'no', '--dir', redisDir],
        logFile: join(logsDir, 'redis-server.log'),
      });
      await waitForPort(redis, redisPort);
      redisUrl = `redis://127.0.0.1:${redisPort}`;
      rows.push(['redis-server', redisUrl, redis.spec.logFile]);
    }

    const grpcPort = await pickPort('the scheduler gRPC API', opts.schedulerPort, log);
    const httpPort = await pickPort('the scheduler HTTP endpoints', opts.schedulerHttpPort, log);
    // Every service listens on loopback unless --listen-host says otherwise: a local stack is
    // not a network service until someone decides it is.
    const listenHost = opts.listenHost ?? LOOPBACK;
    /** Where this machine reaches the services (and where pods are advertised). */
    const reach = advertiseHostFor(listenHost);
    const admin = opts.auth === false ? undefined : ensureAdminToken(opts.home);
    const { GPUFLEET_ADMIN_TOKEN: _ignored, GPUFLEET_TOKEN: _userToken, ...inherited } = process.env;
    // Credentials in this shell are for some other NATS server than the one `up` started.
    if (!opts.natsUrl) for (const name of NATS_CREDENTIAL_VARS) delete inherited[name];
    /** The NATS credential of one process of the stack (none for an open stack or --nats-url). */
    const natsIdentity = (name: string): Record<string, string> => {
      const file = natsAuth?.seedFiles.get(name);
      return file ? { NATS_NKEY_SEED_FILE: file } : {};
    };
    const common = {
      ...inherited,
      GPUFLEET_CLUSTER: fleet.cluster,
      NATS_URL: natsUrl,
      LOG_LEVEL: opts.logLevel,
      HOST: listenHost,
      // The scheduler's APIs, the router's KeyService and the runtimes' pod API all need it.
      ...(admin ? { GPUFLEET_ADMIN_TOKEN: admin.token } : {}),
    };
    // `up` itself asks the scheduler for its nodes, with the same token.
    if (admin) process.env.GPUFLEET_ADMIN_TOKEN = process.env.GPUFLEET_TOKEN = admin.token;
    if (admin?.created) log(`created the admin token of this stack in ${adminTokenPath(opts.home)} (the CLI uses it; --no-auth runs an open stack)`);
    const scheduler = start(group, {
      name: 'scheduler',
      command: process.execPath,
      args: args('scheduler'),
      cwd: REPO_ROOT,
      env: {
        ...common,
        ...natsIdentity('scheduler'),
        GRPC_PORT: String(grpcPort),
        HTTP_PORT: String(httpPort),
        NOT_READY_TIMEOUT_S: String(opts.notReadyTimeoutS),
        REPLICA_RESCHEDULE_AFTER_S: String(opts.rescheduleAfterS),
      },
      logFile: join(logsDir, 'scheduler.log'),
    });
    rows.push(['scheduler', `grpc ${reach}:${grpcPort}  http://${reach}:${httpPort}`, scheduler.spec.logFile]);
    readiness.push({ process: scheduler, ops: `http://${reach}:${httpPort}` });

    for (const names of groups) {
      const agentHttp = await freePort();
      const agentGrpc = await freePort();
      const name = `agent/${groupName(names)}`;
      const agent = start(group, {
        name,
        command: process.execPath,
        args: args('device-discovery'),
        cwd: REPO_ROOT,
        env: {
          ...common,
          ...natsIdentity(nodeIdentityName('agent', groupName(names))),
          NODE_NAME: names[0],
          // One process for several nodes; each keeps its own record, heartbeat and generation.
          ...(names.length > 1 ? { SIMULATED_NODES: names.join(',') } : {}),
          GPUFLEET_PROVIDERS: 'simulated',
          GPUFLEET_FLEET_FILE: fleetFile,
          HEARTBEAT_INTERVAL_S: String(opts.heartbeatIntervalS),
          HTTP_PORT: String(agentHttp),
          GRPC_PORT: String(agentGrpc),
        },
        logFile: join(logsDir, `agent-${groupName(names)}.log`),
      });
      rows.push([name, `http://${reach}:${agentHttp}`, agent.spec.logFile]);
      readiness.push({ process: agent, ops: `http://${reach}:${agentHttp}` });
    }

    for (const names of groups) {
      const runtimeHttp = await freePort();
      const runtimeGrpc = await freePort();
      for (const node of names) mkdirSync(nodeStateDir(opts.home, node), { recursive: true });
      const runtimeGroup = new ProcessGroup(onUnexpectedExit);
      runtimes.push(runtimeGroup);
      const name = `runtime/${groupName(names)}`;
      const runtime = start(runtimeGroup, {
        name,
        command: process.execPath,
        args: args('node-runtime'),
        cwd: REPO_ROOT,
        env: {
          ...common,
          ...natsIdentity(nodeIdentityName('runtime', groupName(names))),
          NODE_NAME: names[0],
          // Several nodes: STATE_DIR is the parent of one directory per node (nodeStateDir).
          ...(names.length > 1 ? { SIMULATED_NODES: names.join(','), STATE_DIR: nodesDir(opts.home) } : { STATE_DIR: nodeStateDir(opts.home, names[0]) }),
          HTTP_PORT: String(runtimeHttp),
          GRPC_PORT: String(runtimeGrpc),
          // Engines and instances' sshd bind where pods are advertised: loopback unless
          // --listen-host names a concrete address.
          ADVERTISE_HOST: reach,
          ENGINE_MODE: 'auto',
        },
        logFile: join(logsDir, `runtime-${groupName(names)}.log`),
      });
      rows.push([name, `http://${reach}:${runtimeHttp}`, runtime.spec.logFile]);
      readiness.push({ process: runtime, ops: `http://${reach}:${runtimeHttp}` });
    }

    const routerHttp = await pickPort('the router (OpenAI API)', opts.routerPort, log);
    const routerOps = await freePort();
    const routerGrpc = await freePort();
    const router = start(edge, {
      name: 'router',
      command: process.execPath,
      args: args('inference-router'),
      cwd: REPO_ROOT,
      env: {
        ...common,
        ...natsIdentity('router'),
        REDIS_URL: redisUrl,
        // HOST from `common`: loopback by default, as without --router-auth anyone who reaches it
        // is served (KeyService needs the admin role once GPUFLEET_ADMIN_TOKEN from `common` turns
        // access control on).
        HTTP_PORT: String(routerHttp),
        OPS_PORT: String(routerOps),
        GRPC_PORT: String(routerGrpc),
        AUTH_REQUIRED: String(opts.routerAuth),
        // Within the 10 s a stopping process gets before SIGKILL, so its usage is flushed.
        DRAIN_TIMEOUT_S: '5',
      },
      logFile: join(logsDir, 'router.log'),
    });
    const keysNote = opts.routerAuth ? 'keys required: gpufleet keys create' : 'keys not required';
    rows.push(['router', `http://${reach}:${routerHttp}/v1  (OpenAI API; ${keysNote})  grpc ${reach}:${routerGrpc}`, router.spec.logFile]);
    readiness.push({ process: router, ops: `http://${reach}:${routerOps}` });

    let hfEndpoint = opts.hfEndpoint;
    if (opts.sampleHub) {
      const readyFile = join(opts.home, 'sample-hub.json');
      rmSync(readyFile, { force: true });
      const entry = join(REPO_ROOT, SAMPLE_HUB_ENTRY);
      const hub = start(group, {
        name: 'sample-hub',
        command: process.execPath,
        args: [...(fromSource ? ['-r', '@swc-node/register', entry] : [outputOf(entry, REPO_ROOT)]), '--ready-file', readyFile],
        cwd: REPO_ROOT,
        env: inherited,
        logFile: join(logsDir, 'sample-hub.log'),
      });
      const ready = await waitForSampleHub(hub, readyFile);
      hfEndpoint = ready.url;
      rows.push(['sample-hub', `${ready.url}  (HF_ENDPOINT of model delivery; ${ready.repos.map((r) => r.id).join(', ')})`, hub.spec.logFile]);
    }

    // Model delivery, both roles in one process: ModelDeliveryService and every node's cache
    // (opened when a node first holds an artifact), the caches under <home>/model-cache, peers
    // authenticated with a token made for this run.
    const deliveryHttp = await freePort();
    const deliveryGrpc = await freePort();
    const delivery = start(group, {
      name: 'model-delivery',
      command: process.execPath,
      args: args('model-delivery'),
      cwd: REPO_ROOT,
      env: {
        ...common,
        ...natsIdentity('model-delivery'),
        ROLE: 'all',
        NODE_NAMES: fleet.nodes.map((n) => n.name).join(','),
        CACHE_DIR: join(opts.home, 'model-cache'),
        PEER_TOKEN: randomBytes(24).toString('base64url'),
        ...(hfEndpoint ? { HF_ENDPOINT: hfEndpoint } : {}),
        HTTP_PORT: String(deliveryHttp),
        GRPC_PORT: String(deliveryGrpc),
      },
      logFile: join(logsDir, 'model-delivery.log'),
    });
    rows.push(['model-delivery', `grpc ${reach}:${deliveryGrpc}  http://${reach}:${deliveryHttp}`, delivery.spec.logFile]);
    readiness.push({ process: delivery, ops: `http://${reach}:${deliveryHttp}` });

    const context: StackContext = {
      cluster: fleet.cluster,
      natsUrl,
      scheduler: `${reach}:${grpcPort}`,
      schedulerHttp: `http://${reach}:${httpPort}`,
      router: `http://${reach}:${routerHttp}`,
      routerGrpc: `${reach}:${routerGrpc}`,
      delivery: `${reach}:${deliveryGrpc}`,
      redisUrl,
      pid: process.pid,
      startedAt: new Date().toISOString(),
      fleetFile,
      logsDir,
    };
    writeContext(opts.home, context);
    const readyIn = new Map<string, number>();
    await Promise.all([
      waitForNodes(context.scheduler, fleet.nodes.length, scheduler),
      ...readiness.map(async ({ process: p, ops }) => {
        await waitForReady(p, ops);
        readyIn.set(p.spec.name, (Date.now() - startedAt) / 1000);
      }),
    ]);

    const width = Math.max(...rows.map((r) => r[0].length));
    const n = groups.length;
    const perProcess = n === fleet.nodes.length ? 'one agent and one runtime per node' : `${n} agent and ${n} runtime process${n === 1 ? '' : 'es'}`;
    log(`gpufleet is up: cluster "${fleet.cluster}", ${fleet.nodes.length} nodes from ${fleetFile} (${perProcess}), ready in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
    for (const [name, where, file] of rows) {
      const ready = readyIn.get(name);
      log(`  ${name.padEnd(width)}   ${where}   (${ready === undefined ? '' : `ready in ${ready.toFixed(1)} s, `}log: ${file})`);
    }
    log(`context: ${join(opts.home, 'context.json')}   try: gpufleet get instancetypes`);
    if (opts.sampleHub) {
      log('offline model delivery from the sample hub, try:');
      log('  gpufleet create artifact tiny-llama --hf sample/tiny-llama --wait');
      log('  gpufleet deploy --artifact tiny-llama --wait');
    }
    return { context, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * Ends a start-up wait at once when the process has exited, quoting the last lines of its log
 * (usually the reason), instead of waiting out the timeout.
 */
async function failIfExited(p: ManagedProcess): Promise<void> {
  if (p.child.exitCode === null && p.child.signalCode === null) return;
  const code = await p.exited;
  const how = p.child.signalCode ?? `code ${code}`;
  const tail = logTail(p.spec.logFile).map((l) => `\n    ${l}`).join('');
  throw new StopWaiting(`${p.spec.name} exited while starting (${how}); last lines of ${p.spec.logFile}:${tail || ' (empty)'}`);
}

/** Waits for the sample hub's ready file (written once it listens), the URL and repositories in it. */
async function waitForSampleHub(p: ManagedProcess, readyFile: string): Promise<SampleHubReady> {
  return waitFor(`${p.spec.name} to listen (${readyFile})`, async () => {
    await failIfExited(p);
    return existsSync(readyFile) ? (JSON.parse(readFileSync(readyFile, 'utf8')) as SampleHubReady) : undefined;
  }, { timeoutMs: 30_000, intervalMs: 100 });
}

async function waitForPort(p: ManagedProcess, port: number): Promise<void> {
  await waitFor(`${p.spec.name} to listen on ${port}`, async () => {
    await failIfExited(p);
    return (await isPortOpen(port)) || undefined;
  }, { timeoutMs: 15_000, intervalMs: 100 });
}

/** Waits until a service's /readyz answers 200. */
async function waitForReady(p: ManagedProcess, ops: string): Promise<void> {
  await waitFor(`${p.spec.name} to be ready (${ops}/readyz)`, async () => {
    await failIfExited(p);
    const res = await fetch(`${ops}/readyz`, { signal: AbortSignal.timeout(2_000) });
    return res.status === 200 || undefined;
  }, { timeoutMs: 90_000, intervalMs: 250 });
}

/** Waits until the scheduler answers and lists every node of the fleet. */
async function waitForNodes(address: string, expected: number, scheduler: ManagedProcess): Promise<void> {
  const client = new CapacityServiceClient(address, channelCredentials(), cliClientOptions());
  try {
    await waitFor(`the scheduler to see all ${expected} nodes`, async () => {
      await failIfExited(scheduler);
      const res = await callUnary(client, client.listNodes, { pool: '', labelSelector: {}, pageSize: 0, pageToken: '' }, { deadlineMs: 2_000 });
      return res.nodes.length >= expected || undefined;
    }, { timeoutMs: 90_000, intervalMs: 250 });
  } finally {
    client.close();
  }
}
