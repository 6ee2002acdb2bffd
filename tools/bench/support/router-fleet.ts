// A local serving fleet for router benchmarks, built from the processes the product runs:
// an ephemeral nats-server (JetStream) and redis-server (libs/testing), engine-sim processes, and
// one inference-router process (apps/inference-router/src/main.ts) that discovers the engines from a
// ModelDeployment record written straight into the deployments bucket, the contract the
// scheduler fulfils. Nothing here imports an app: apps are started as processes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'nats';
import { Buckets, DeploymentPhase, ModelDeployment, storeKey, workloadKey, type ReplicaStatus } from '@gpufleet/contracts';
import { KvStore } from '@gpufleet/messaging';
import { freePort, logTail, ProcessGroup, requireBinary, startNats, startRedis, stopOne, waitFor, type ManagedProcess, type RunningServer } from '@gpufleet/testing';
import { REPO_ROOT, untilServing } from './http-load';

const ENGINE_SIM_MAIN = join(REPO_ROOT, 'apps/engine-sim/src/main.ts');
const ROUTER_MAIN = join(REPO_ROOT, 'apps/inference-router/src/main.ts');
const NODE_TS = ['-r', 'reflect-metadata', '-r', '@swc-node/register'];

/** Last `chars` characters of a log file, for error messages. */

function untilHttp200(what: string, proc: ManagedProcess, url: string): Promise<void> {
  return untilServing(`${what} (${url}; log: ${proc.spec.logFile})`, url, () =>
    proc.child.exitCode !== null ? `exited with ${proc.child.exitCode}: ${logTail(proc.spec.logFile).join(' | ')}` : undefined,
  );
}

/** Processes of one benchmark, with their logs in one temp directory (removed by `stop(true)`). */
export class BenchFleet {
  readonly logs = mkdtempSync(join(tmpdir(), 'gpufleet-bench-'));
  private readonly stopping = new Set<ManagedProcess>();
  private readonly group = new ProcessGroup((p, code, signal) => {
    if (!this.stopping.has(p)) process.stderr.write(`${p.spec.name} exited unexpectedly (${signal ?? code}); log: ${p.spec.logFile}\n`);
  });
  private readonly servers: RunningServer[] = [];
  private count = 0;

  /** nats-server with JetStream on a free port: the router's deployments and API keys live in its buckets. */
  async startNats(): Promise<string> {
    const server = await startNats();
    this.servers.push(server);
    return server.url;
  }

  /**
   * redis-server on a free port, persisting nothing; undefined when it is not installed (the
   * router then fails open on rate limits and retries its usage counters, neither of which is on
   * the request path of a key without limits).
   */
  async startRedis(): Promise<string | undefined> {
    try {
      requireBinary('redis-server');
    } catch {
      return undefined;
    }
    const server = await startRedis();
    this.servers.push(server);
    return server.url;
  }

  /**
   * Starts one engine-sim per port in `ports` (replicas `sim-0`, `sim-1`, … in that order) with
   * `flags`, in parallel, and waits until each is ready.
   */
  startEngines(model: string, flags: readonly string[], ports: readonly number[]): Promise<EngineSimProcess[]> {
    return Promise.all(
      ports.map(async (port, i) => {
        const name = `sim-${i}`;
        const proc = this.group.start({
          name,
          command: process.execPath,
          args: [...NODE_TS, ENGINE_SIM_MAIN, '--model', model, '--port', String(port), '--host', '127.0.0.1', '--replica-name', name, ...flags],
          cwd: REPO_ROOT,
          // NATS_URL empty: no KV events (the router does not read them).
          env: { ...process.env, LOG_LEVEL: 'warn', NATS_URL: '', OTEL_EXPORTER_OTLP_ENDPOINT: '' },
          logFile: join(this.logs, `${name}.${++this.count}.log`),
        });
        const endpoint = engineEndpoint(port);
        await untilHttp200(`engine-sim ${name}`, proc, `${endpoint}/readyz`);
        return { name, endpoint, stop: () => this.stopProcess(proc) };
      }),
    );
  }

  /**
   * Starts an inference-router process with `env` over the benchmark defaults (no API keys, rate
   * limits failing open, logs at warn) and waits until it routes `model` to `replicas` replicas.
   */
  async startRouter(cluster: string, natsUrl: string, redisUrl: string, model: string, replicas: number, env: Record<string, string>): Promise<RouterProcess> {
    const [http, ops, grpc] = [await freePort(), await freePort(), await freePort()];
    const name = `router-${++this.count}`;
    const proc = this.group.start({
      name,
      command: process.execPath,
      args: [...NODE_TS, ROUTER_MAIN],
      cwd: REPO_ROOT,
      env: {
        ...process.env,
        GPUFLEET_CLUSTER: cluster,
        NATS_URL: natsUrl,
        REDIS_URL: redisUrl,
        HOST: '127.0.0.1',
        HTTP_PORT: String(http),
        OPS_PORT: String(ops),
        GRPC_PORT: String(grpc),
        ROUTER_NAME: name,
        AUTH_REQUIRED: 'false',
        RATE_LIMIT_FAIL_OPEN: 'true',
        LOG_LEVEL: 'warn',
        OTEL_EXPORTER_OTLP_ENDPOINT: '',
        ...env,
      },
      logFile: join(this.logs, `${name}.log`),
    });
    const opsBase = `http://127.0.0.1:${ops}`;
    await untilHttp200('inference-router', proc, `${opsBase}/readyz`);
    await waitFor(
      `the router to see ${replicas} ready replicas of ${model} (log: ${proc.spec.logFile})`,
      async () => sumSeries(await scrape(opsBase), 'gpufleet_router_replicas_ready', `model="${model}"`) === replicas || undefined,
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    return { base: `http://127.0.0.1:${http}`, opsBase, logFile: proc.spec.logFile, stop: () => this.stopProcess(proc) };
  }

  private stopProcess(proc: ManagedProcess): Promise<void> {
    this.stopping.add(proc);
    return stopOne(proc, 10_000);
  }

  /** Stops every process (newest first) and removes the servers' data; the logs stay unless `removeLogs`. */
  async stop(removeLogs: boolean): Promise<void> {
    await this.group.stopAll(10_000);
    await Promise.all(this.servers.map((s) => s.dispose()));
    if (removeLogs) rmSync(this.logs, { recursive: true, force: true });
  }
}

/** The base URL of an engine on `port` (what a deployment's replica endpoint holds). */
export function engineEndpoint(port: number): string {
  return `http://127.0.0.1:${port}`;
}

/** `count` distinct free ports. */
export async function freePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

export interface EngineSimProcess {
  /** The replica name: engine-sim's `x-gpufleet-replica` header. */
  readonly name: string;
  readonly endpoint: string;
  stop(): Promise<void>;
}

export interface RouterProcess {
  /** The OpenAI API. */
  readonly base: string;
  /** /healthz, /readyz, /metrics. */
  readonly opsBase: string;
  readonly logFile: string;
  stop(): Promise<void>;
}

/**
 * Writes (or replaces) the ModelDeployment `<namespace>.<name>` whose status lists `endpoints`
 * as Ready `server` replicas serving `servedModelName`: what the router routes to.
 */
export async function putDeployment(natsUrl: string, cluster: string, name: string, servedModelName: string, endpoints: readonly string[], namespace = 'default'): Promise<void> {
  const nc = await connect({ servers: natsUrl });
  try {
    const store = await KvStore.open(nc.jetstream(), Buckets.deployments(cluster), ModelDeployment);
    const replicas: ReplicaStatus[] = endpoints.map((endpoint, i) => ({
      role: 'server',
      ordinal: i,
      workload: `${name}-${i}`,
      state: 'Ready',
      node: `node-${i}`,
      endpoint,
      acceleratorIds: [],
      restarts: 0,
      message: '',
      updated: true,
      logsUrl: '',
    }));
    const deployment = ModelDeployment.fromPartial({
      spec: { name, namespace, model: servedModelName, servedModelName, roles: [{ role: 'server', replicas: endpoints.length, size: 1 }] },
      status: { phase: DeploymentPhase.DEPLOYMENT_PHASE_READY, readyReplicas: endpoints.length, desiredReplicas: endpoints.length, replicas, endpoints: [...endpoints] },
      generation: 1,
    });
    await store.put(storeKey(workloadKey(namespace, name)), deployment);
  } finally {
    await nc.close();
  }
}

/** One Prometheus sample: the series' name with labels as written (`name{a="b"}`), and its value. */
export type PrometheusSamples = ReadonlyMap<string, number>;

/** Parses Prometheus text exposition into series → value (comments and blank lines skipped). */
export function parsePrometheus(text: string): PrometheusSamples {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    if (space > 0) samples.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return samples;
}

/** Sum of every series named `name` (any labels) whose labels contain `filter`. */
export function sumSeries(samples: PrometheusSamples, name: string, filter = ''): number {
  let sum = 0;
  for (const [series, value] of samples) {
    if (series !== name && !series.startsWith(`${name}{`)) continue;
    if (filter && !series.includes(filter)) continue;
    sum += value;
  }
  return sum;
}

/** Scrapes `<base>/metrics`. */
export async function scrape(base: string): Promise<PrometheusSamples> {
  const res = await fetch(`${base}/metrics`);
  if (res.status !== 200) throw new Error(`GET ${base}/metrics answered ${res.status}`);
  return parsePrometheus(await res.text());
}
