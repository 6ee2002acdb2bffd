// Startup benchmark (issue 11): for each service, time from spawn to `/readyz` 200 and resident
// memory (VmRSS) once ready, the built output (`node -r reflect-metadata dist/apps/<app>/src/main.js`,
// tools/build/build.ts) against today's on-the-fly compilation (`node -r reflect-metadata -r
// @swc-node/register apps/<app>/src/main.ts`, what `gpufleet up --from-source`, `nx serve`, the unit and integration tests and the images run).
//
//   npm run bench -- startup [--runs 3] [--warmup 1] [--services scheduler,node-runtime,…]
//
// Each service starts alone against its own nats-server (JetStream) and redis-server
// (libs/testing), `--runs` times per form, the two forms alternating (built first in even runs,
// today's first in odd ones) so machine noise hits both. One unmeasured start of the scheduler
// and of the agent set up the cluster (stream, buckets, node h100-0's inventory, which the node
// runtime waits for), then `--warmup` unmeasured starts of each form warm the file cache. Each
// start gets fresh ports and, for the node runtime, a fresh STATE_DIR, and every service the
// Node flags of NODE_FLAGS (libs/process-kit): the scheduler's fixed young generation, the
// node-side processes' small one and heap bound. Figures are medians. dist/ is built first when
// stale (cached: nothing is compiled when it is fresh).
//
// Then `gpufleet up` end to end (support/up-stack.ts: bin/gpufleet in a fresh home, time from
// spawn to "gpufleet is up", VmRSS summed over the whole process tree), `--up-runs` times per
// form, alternating: built (what `npm start` runs now: dist/, several nodes per agent and runtime
// process), today (`--from-source --nodes-per-process 1`: how `up` ran when issue 11 was filed)
// and, to tell the two gains apart, built with one agent and one runtime per node. Last, one
// `up` of the 1,000-node fleet file (`--fleet`, default examples/fleets/fleet-1000.yaml).
// `--up-runs 0` skips both.
//
// Ends with: <service>_ready_ms, <service>_rss_mib (built), <service>_ready_ratio and
// <service>_rss_ratio (built / today) per service (so node_runtime_rss_mib and
// scheduler_ready_ratio), agent_rss_mib (device-discovery, built), and up_ready_ratio
// (built / today), up_rss_mib (built) and fleet_1000_rss_mib.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startNats, startRedis, type RunningServer } from '@gpufleet/testing';
import { buildApp as build, nodeFlagsOf } from '@gpufleet/process-kit';
import { REPO_ROOT, startProcess } from './support/http-load';
import { describeKinds, measureUp, type UpSample } from './support/up-stack';

type Form = 'built' | 'today';

interface Ports {
  http: number;
  grpc: number;
  ops: number;
}

interface Servers {
  natsUrl: string;
  redisUrl: string;
  stateDir: () => string;
}

interface Service {
  app: string;
  /** Arguments after the entry point. */
  args?: (ports: Ports) => string[];
  env: (ports: Ports, servers: Servers) => Record<string, string>;
  /** The port whose /readyz says the service is ready. */
  readyPort: (ports: Ports) => number;
}

const SERVICES: Service[] = [
  {
    app: 'scheduler',
    env: (p) => ({ GRPC_PORT: String(p.grpc), HTTP_PORT: String(p.http) }),
    readyPort: (p) => p.http,
  },
  {
    app: 'device-discovery',
    env: (p) => ({
      GRPC_PORT: String(p.grpc),
      HTTP_PORT: String(p.http),
      GPUFLEET_PROVIDERS: 'simulated',
      GPUFLEET_FLEET_FILE: join(REPO_ROOT, 'examples/fleets/dev.yaml'),
      NODE_NAME: 'h100-0',
    }),
    readyPort: (p) => p.http,
  },
  {
    app: 'node-runtime',
    env: (p, s) => ({ GRPC_PORT: String(p.grpc), HTTP_PORT: String(p.http), NODE_NAME: 'h100-0', STATE_DIR: s.stateDir() }),
    readyPort: (p) => p.http,
  },
  {
    app: 'inference-router',
    env: (p, s) => ({ GRPC_PORT: String(p.grpc), HTTP_PORT: String(p.http), OPS_PORT: String(p.ops), REDIS_URL: s.redisUrl, AUTH_REQUIRED: 'false' }),
    readyPort: (p) => p.ops,
  },
  {
    app: 'engine-sim',
    args: (p) => ['--model', 'bench-model', '--port', String(p.http), '--host', '127.0.0.1'],
    env: () => ({}),
    readyPort: (p) => p.http,
  },
];

/**
 * Started once, unmeasured, before the runs: the scheduler creates the cluster's stream and
 * buckets, and the agent publishes node h100-0's inventory, which the node runtime waits for
 * before it says ready (the record stays in the bucket after the agent stops).
 */
const SETUP = SERVICES.slice(0, 2);

interface Options {
  runs: number;
  warmup: number;
  services: Service[];
  upRuns: number;
  fleet: string;
}

function parseOptions(args: string[]): Options {
  const options: Options = { runs: 3, warmup: 1, services: SERVICES, upRuns: 1, fleet: 'examples/fleets/fleet-1000.yaml' };
  for (let i = 0; i < args.length; i += 2) {
    const value = args[i + 1];
    if (args[i] === '--fleet') {
      if (!value) throw new Error('--fleet needs a fleet file');
      options.fleet = value;
      continue;
    }
    if (args[i] === '--services') {
      const names = (value ?? '').split(',');
      const unknown = names.filter((n) => !SERVICES.some((s) => s.app === n));
      if (unknown.length > 0) throw new Error(`unknown services ${unknown.join(', ')} (${SERVICES.map((s) => s.app).join(', ')})`);
      options.services = SERVICES.filter((s) => names.includes(s.app));
      continue;
    }
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0 || (args[i] === '--runs' && n === 0)) throw new Error(`${args[i]} needs a ${args[i] === '--runs' ? 'positive' : 'non-negative'} integer, got ${value}`);
    if (args[i] === '--runs') options.runs = n;
    else if (args[i] === '--warmup') options.warmup = n;
    else if (args[i] === '--up-runs') options.upRuns = n;
    else throw new Error(`unknown option ${args[i]} (--runs, --warmup, --services, --up-runs, --fleet)`);
  }
  return options;
}

/** VmRSS of `pid` in MiB, from /proc/<pid>/status. */
function rssMib(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(match[1]) / 1024;
}

function entry(service: Service, form: Form): string[] {
  return form === 'built'
    ? ['-r', 'reflect-metadata', join(REPO_ROOT, 'dist/apps', service.app, 'src/main.js')]
    : ['-r', 'reflect-metadata', '-r', '@swc-node/register', join(REPO_ROOT, 'apps', service.app, 'src/main.ts')];
}

/** Starts the service once: milliseconds from spawn to /readyz 200, and its RSS then. */
async function startOnce(service: Service, form: Form, servers: Servers): Promise<{ readyMs: number; rssMib: number }> {
  const ports: Ports = { http: await freePort(), grpc: await freePort(), ops: await freePort() };
  const base = `http://127.0.0.1:${service.readyPort(ports)}`;
  const env = { GPUFLEET_CLUSTER: 'dev', NATS_URL: servers.natsUrl, OTEL_EXPORTER_OTLP_ENDPOINT: '', ...service.env(ports, servers) };
  const args = [...nodeFlagsOf(service.app), ...entry(service, form), ...(service.args?.(ports) ?? [])];
  const started = process.hrtime.bigint();
  const proc = await startProcess(`${service.app} (${form})`, process.execPath, args, base, '/readyz', env, 10);
  const readyMs = Number(process.hrtime.bigint() - started) / 1e6;
  const rss = rssMib(proc.child.pid ?? 0);
  await proc.stop();
  return { readyMs, rssMib: rss };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const pad = (s: string | number, n: number): string => String(s).padStart(n);

export async function run(args: string[]): Promise<void> {
  const options = parseOptions(args);
  for (const service of new Set([...SETUP, ...options.services])) await build(service.app, { log: (line) => console.log(line) });

  const servers: RunningServer[] = [await startNats(), await startRedis()];
  const stateRoot = mkdtempSync(join(tmpdir(), 'gpufleet-startup-bench-'));
  let stateDirs = 0;
  const ctx: Servers = { natsUrl: servers[0].url, redisUrl: servers[1].url, stateDir: () => join(stateRoot, `node-runtime-${++stateDirs}`) };
  const samples = new Map<string, { readyMs: number; rssMib: number }[]>();
  try {
    for (const service of SETUP) await startOnce(service, 'built', ctx);
    for (let w = 0; w < options.warmup; w++) {
      for (const service of options.services) for (const form of ['built', 'today'] as const) await startOnce(service, form, ctx);
    }
    for (let i = 0; i < options.runs; i++) {
      const forms: Form[] = i % 2 === 0 ? ['built', 'today'] : ['today', 'built'];
      for (const service of options.services) {
        for (const form of forms) {
          const sample = await startOnce(service, form, ctx);
          const key = `${service.app}/${form}`;
          samples.set(key, [...(samples.get(key) ?? []), sample]);
          console.log(`run ${i + 1}/${options.runs} ${pad(service.app, 16)} ${pad(form, 5)}: ready ${sample.readyMs.toFixed(0)} ms, rss ${sample.rssMib.toFixed(1)} MiB`);
        }
      }
    }
  } finally {
    for (const server of servers) await server.dispose();
    rmSync(stateRoot, { recursive: true, force: true });
  }

  const figures = options.services.map((service) => {
    const of = (form: Form) => {
      const list = samples.get(`${service.app}/${form}`) ?? [];
      return { readyMs: median(list.map((s) => s.readyMs)), rssMib: median(list.map((s) => s.rssMib)) };
    };
    return { app: service.app, built: of('built'), today: of('today') };
  });

  console.log(`\nmedians of ${options.runs} starts per form (built: dist/ with plain node; today: @swc-node/register)`);
  console.log(`${'service'.padEnd(18)}${pad('ready built', 12)}${pad('ready today', 12)}${pad('ratio', 7)}${pad('rss built', 11)}${pad('rss today', 11)}${pad('ratio', 7)}`);
  for (const f of figures) {
    console.log(
      `${f.app.padEnd(18)}${pad(`${f.built.readyMs.toFixed(0)} ms`, 12)}${pad(`${f.today.readyMs.toFixed(0)} ms`, 12)}` +
        `${pad((f.built.readyMs / f.today.readyMs).toFixed(2), 7)}${pad(`${f.built.rssMib.toFixed(1)} MiB`, 11)}` +
        `${pad(`${f.today.rssMib.toFixed(1)} MiB`, 11)}${pad((f.built.rssMib / f.today.rssMib).toFixed(2), 7)}`,
    );
  }
  const stack = options.upRuns > 0 ? await measureStacks(options) : undefined;
  console.log('');

  for (const f of figures) {
    const name = f.app.replace(/-/g, '_');
    console.log(`${name}_ready_ms: ${f.built.readyMs.toFixed(0)}`);
    console.log(`${name}_rss_mib: ${f.built.rssMib.toFixed(1)}`);
    console.log(`${name}_ready_ratio: ${(f.built.readyMs / f.today.readyMs).toFixed(2)}`);
    console.log(`${name}_rss_ratio: ${(f.built.rssMib / f.today.rssMib).toFixed(2)}`);
  }
  // node_runtime_rss_mib and scheduler_ready_ratio are among the lines above.
  const agent = figures.find((f) => f.app === 'device-discovery');
  if (agent) console.log(`agent_rss_mib: ${agent.built.rssMib.toFixed(1)}`);
  if (stack) {
    console.log(`up_ready_ratio: ${(stack.built.readyMs / stack.today.readyMs).toFixed(2)}`);
    console.log(`up_rss_mib: ${stack.built.rssMib.toFixed(0)}`);
    console.log(`fleet_1000_rss_mib: ${stack.fleet.rssMib.toFixed(0)}`);
  }
}

type UpForm = 'built' | 'today' | 'built, a process per node';

const UP_FORMS: Record<UpForm, string[]> = {
  built: [],
  today: ['--from-source', '--nodes-per-process', '1'],
  'built, a process per node': ['--nodes-per-process', '1'],
};

/** `gpufleet up` of the dev fleet in each form (medians of --up-runs), then once of the big fleet. */
async function measureStacks(options: Options): Promise<{ built: UpSample; today: UpSample; fleet: UpSample }> {
  const forms = Object.keys(UP_FORMS) as UpForm[];
  const samples = new Map<UpForm, UpSample[]>();
  for (let i = 0; i < options.upRuns; i++) {
    for (const form of i % 2 === 0 ? forms : [...forms].reverse()) {
      const sample = await measureUp(`up (${form})`, UP_FORMS[form]);
      samples.set(form, [...(samples.get(form) ?? []), sample]);
      console.log(`up run ${i + 1}/${options.upRuns} ${pad(form, 26)}: ready ${(sample.readyMs / 1000).toFixed(1)} s, rss ${sample.rssMib.toFixed(0)} MiB in ${sample.processes} processes (${describeKinds(sample)})`);
    }
  }
  const fleet = await measureUp(`up --fleet ${options.fleet}`, ['--fleet', options.fleet]);
  console.log(`up --fleet ${options.fleet}: ready ${(fleet.readyMs / 1000).toFixed(1)} s, rss ${fleet.rssMib.toFixed(0)} MiB in ${fleet.processes} processes (${describeKinds(fleet)})`);
  const medianOf = (form: UpForm): UpSample => {
    const list = samples.get(form) ?? [];
    const byReady = [...list].sort((a, b) => a.readyMs - b.readyMs);
    return { ...byReady[Math.floor((byReady.length - 1) / 2)], readyMs: median(list.map((s) => s.readyMs)), rssMib: median(list.map((s) => s.rssMib)) };
  };
  console.log(`\ngpufleet up of examples/fleets/dev.yaml, medians of ${options.upRuns} (today: --from-source --nodes-per-process 1)`);
  const today = medianOf('today');
  for (const form of forms) {
    const m = medianOf(form);
    console.log(`${form.padEnd(28)}ready ${pad((m.readyMs / 1000).toFixed(1), 5)} s (${(m.readyMs / today.readyMs).toFixed(2)}×)   rss ${pad(m.rssMib.toFixed(0), 5)} MiB (${(m.rssMib / today.rssMib).toFixed(2)}×)`);
  }
  return { built: medianOf('built'), today, fleet };
}
